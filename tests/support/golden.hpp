// Access to the independent reference data in ../shared (see
// shared/golden/README.md). Header-only; used by the model and e2e tests.
#pragma once

#include <fstream>
#include <sstream>
#include <algorithm>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

namespace cortex::testing {

inline std::string shared_dir() { return CORTEX_SHARED_DIR; }

inline bool file_exists(const std::string& p) { return std::ifstream(p).good(); }

// A model file by name: golden/models/ first, then models/.
inline std::string model_path(const std::string& name) {
  const std::string g = shared_dir() + "/golden/models/" + name;
  return file_exists(g) ? g : shared_dir() + "/models/" + name;
}

inline nlohmann::json load_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

inline std::string hex_to_bytes(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

struct tolerance {
  double atol, rtol;
  bool greedy_must_match;
};

// README tolerances by the predominant weight type of the file name.
inline tolerance tolerance_for(const std::string& model_name) {
  if (model_name.find("f16") != std::string::npos) return {2e-2, 1e-3, true};
  if (model_name.find("q8_0") != std::string::npos || model_name.find("q4_") != std::string::npos) return {0.1, 1e-2, false};
  return {1e-3, 1e-4, true};  // f32 (stories260K.gguf is all F32)
}

// A file's bytes as they are ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A gtest parameter name from a model name ("tiny-llama-f32" -> "tiny_llama_f32").
template <class Info>
std::string model_param_name(const Info& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

}  // namespace cortex::testing
