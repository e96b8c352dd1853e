#include "apps/cortex/common.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "model/kv_arena.hpp"

namespace cortex::cli {

int parse_args(args& a, int argc, char** argv) {
  if (!a.parse(argc, argv)) {
    std::fprintf(stderr, "cortex: %s\n", a.error().c_str());
    return 2;
  }
  if (a.help_requested()) {
    std::fputs(a.usage().c_str(), stdout);
    return 0;
  }
  return -1;
}

std::unique_ptr<model> load_model(args& a, bool vocab_only) {
  const std::string path = a.get("model");
  if (path.empty()) {
    std::fprintf(stderr, "cortex: --model PATH is required (a GGUF file; 'cortex make-model' writes a synthetic one)\n");
    return nullptr;
  }
  auto m = vocab_only ? model::load_vocab_only(path) : model::load(path);
  if (!m) {
    std::fprintf(stderr, "cortex: %s\n", m.error().message.c_str());
    return nullptr;
  }
  return std::move(*m);
}

bool check_generates(const model& m, const char* command) {
  if (!m.hparams().encoder.enabled) return true;
  std::fprintf(stderr, "cortex: %s: '%s' is an embedding model (architecture %s): it computes no logits; use cortex embed\n",
               command, m.name().c_str(), m.hparams().arch.c_str());
  return false;
}

int thread_count(args& a) {
  auto n = a.get_int("threads");
  if (!n || *n <= 0) return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return static_cast<int>(*n);
}

bool parse_id_list(const std::string& s, std::vector<int32_t>& out) {
  out.clear();
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) return false;
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > INT32_MAX) return false;
    out.push_back(static_cast<int32_t>(v));
  }
  return !out.empty();
}

bool read_text(const std::string& path, std::string& out) {
  std::ostringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    ss << f.rdbuf();
  }
  out = ss.str();
  return true;
}

option_spec kv_type_option_spec() {
  return {"kv-type", "T", "K/V cache element type: f32, f16 (llama.cpp's default), bf16, q8_0", "f16"};
}

bool read_kv_type(args& a, const model& m, kernels::kv_type& out) {
  if (!kernels::parse_kv_type(a.get("kv-type"), out)) {
    std::fprintf(stderr, "cortex: --kv-type must be one of %s, got '%s'\n", kernels::kv_type_choices(), a.get("kv-type").c_str());
    return false;
  }
  if (auto s = kv_type_fits(m.hparams(), out); !s) {
    std::fprintf(stderr, "cortex: %s\n", s.message.c_str());
    return false;
  }
  return true;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace cortex::cli
