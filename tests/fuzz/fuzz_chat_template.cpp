// Fuzz target: chat templates (chat/). Byte 0 picks what is fuzzed:
//   even: the rest is template text: lexer, parser, then a render with a
//         fixed conversation (system, user, assistant with a tool call, tool);
//   odd:  the rest is request JSON (messages as the gateways hand them to
//         intake: a list, or {"messages": [...], "chat_template_kwargs": {...}})
//         rendered into prompt tokens (build_chat_prompt) with one of the
//         reference templates of ../shared/golden/chat (byte 1 picks it).
// Render limits are tighter than production's (fewer steps and output
// bytes) only so that one input runs in milliseconds; the code paths are
// the same.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_prompt.hpp"
#include "chat/chat_template.hpp"
#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/fuzz_shared.hpp"

using namespace cortex;
using ojson = nlohmann::ordered_json;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "fuzz_chat_template: %s\n", what.c_str());
  std::abort();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct fixture {
  std::vector<chat_template> templates;  // ../shared/golden/chat/templates
  std::unique_ptr<gguf::file> vocab_file;
  std::unique_ptr<tokenizer> tok;        // llama-spm: renders BOS/EOS texts and tokenizes
  ojson conversation;                    // the fixed messages of the template-text mode
  chat::render_env env;
};

const fixture& fix() {
  static const fixture f = [] {
    fixture x;
    const std::string dir = fuzz::shared_dir() + "/golden/chat/templates/";
    for (const char* name : {"llama3", "llama3_1", "qwen2_5", "qwen3", "mistral_v0_3", "mistral_v0_3_tools", "gemma3",
                             "phi3_mini", "zephyr", "deepseek_v3"}) {
      auto t = chat_template::parse(read_file(dir + name + ".jinja"));
      if (!t) die(std::string(name) + ": " + t.error().message);
      x.templates.push_back(std::move(*t));
    }
    auto vf = gguf::file::open(fuzz::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-llama-spm.gguf");
    if (!vf) die(vf.error().message);
    auto tok = tokenizer::from_gguf(**vf);
    if (!tok) die(tok.error().message);
    x.vocab_file = std::move(*vf);
    x.tok = std::move(*tok);
    x.conversation = ojson::parse(R"([
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "What is 2+2?"},
      {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "id": "c1",
        "function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]},
      {"role": "tool", "content": "4", "tool_call_id": "c1"},
      {"role": "assistant", "content": "4"},
      {"role": "user", "content": [{"type": "text", "text": "thanks"}]}])");
    x.env.now = [] {
      std::tm tm{};
      tm.tm_year = 2026 - 1900;
      tm.tm_mon = 10;
      tm.tm_mday = 23;
      return tm;
    };
    x.env.limits.max_steps = 100'000;
    x.env.limits.max_output_bytes = 1u << 20;
    return x;
  }();
  return f;
}

void fuzz_template_text(const std::string& text) {
  const fixture& f = fix();
  auto t = chat_template::parse(text);
  if (!t) {
    FUZZ_CHECK(!t.error().message.empty());
    return;
  }
  chat_render_input in;
  in.messages = f.conversation;
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  in.extra = ojson::parse(R"({"tools": [{"type": "function", "function": {"name": "add",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}], "enable_thinking": false})");
  auto out = t->render(make_chat_context(in), f.env);
  if (out) FUZZ_CHECK(out->size() <= f.env.limits.max_output_bytes);
}

void fuzz_request_json(uint8_t pick, const std::string& body) {
  const fixture& f = fix();
  ojson j = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return;
  chat_prompt_request req;
  if (j.is_object() && j.contains("messages")) {
    req.messages = j["messages"];
    if (j.contains("chat_template_kwargs")) req.kwargs = j["chat_template_kwargs"];
    if (j.contains("add_generation_prompt") && j["add_generation_prompt"].is_boolean())
      req.add_generation_prompt = j["add_generation_prompt"].get<bool>();
  } else {
    req.messages = std::move(j);
  }
  auto p = build_chat_prompt(f.templates[pick % f.templates.size()], req, *f.tok, f.env);
  if (!p) {
    FUZZ_CHECK(!p.error().message.empty());
    return;
  }
  for (int32_t id : p->tokens) FUZZ_CHECK(id >= 0 && id < f.tok->n_vocab());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)fix();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  if (mode % 2 == 0) {
    fuzz_template_text(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  } else {
    if (size < 2) return 0;
    fuzz_request_json(data[1], std::string(reinterpret_cast<const char*>(data + 2), size - 2));
  }
  return 0;
}
