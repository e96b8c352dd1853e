#include "chat/tool_format.hpp"

#include "chat/tool_format_families.hpp"

namespace cortex::chat {

std::string tool_format::call_id(uint64_t seed, uint32_t index) const {
  static const char k_alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + (index + 1) * 0xD6E8FEB86659FD93ull;
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) {
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    id += k_alnum[x % 62];
  }
  return id;
}

const std::vector<std::string>& tool_format_names() {
  static const std::vector<std::string> names = {"hermes", "llama3", "mistral", "deepseek", "harmony", "granite", "qwen3_coder", "functionary"};
  return names;
}

std::unique_ptr<tool_format> make_tool_format(std::string_view name) {
  if (name == "hermes") return std::make_unique<hermes_format>();
  if (name == "llama3") return std::make_unique<llama3_format>();
  if (name == "mistral") return std::make_unique<mistral_format>();
  if (name == "deepseek") return std::make_unique<deepseek_format>();
  if (name == "harmony") return std::make_unique<harmony_format>();
  if (name == "granite") return std::make_unique<granite_format>();
  if (name == "qwen3_coder") return std::make_unique<qwen3_coder_format>();
  if (name == "functionary") return std::make_unique<functionary_format>();
  return nullptr;
}

template_traits detect_template_traits(std::string_view t) {
  const auto has = [&](std::string_view s) { return t.find(s) != std::string_view::npos; };
  template_traits r;
  // The most specific markers first: a template may mention another
  // family's tags in a comment or a system text, never its call tokens.
  if (has("<|channel|>") && has("<|message|>")) r.format = "harmony";
  else if (has("tool\xE2\x96\x81" "calls\xE2\x96\x81" "begin")) r.format = "deepseek";
  else if (has("[TOOL_CALLS]")) r.format = "mistral";
  else if (has("<|tool_call|>")) r.format = "granite";
  else if (has(">>>all") && has(">>>${recipient}")) r.format = "functionary";  // v3.2
  else if (has("<function=") && has("<parameter=")) r.format = "qwen3_coder";
  else if (has("<|python_tag|>") || (has("<|start_header_id|>") && has("ipython"))) r.format = "llama3";
  else r.format = "hermes";  // <tool_call> (Hermes, Qwen) and templates with no syntax of their own
  r.think_tags = has("<think>") || has("</think>");
  r.renders_tools = has("tools");
  return r;
}

}  // namespace cortex::chat
