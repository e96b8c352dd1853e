// The tool_format of each family (one .cpp each; make_tool_format picks).
// Internal to chat/; tests use them directly.
#pragma once

#include <map>

#include "chat/tool_format.hpp"

namespace cortex::chat {

class hermes_format final : public tool_format {
 public:
  const char* name() const override { return "hermes"; }
  void parse(std::string_view text, bool partial, parsed_output& out) const override;
  bool uses_think_tags() const override { return true; }
  std::string opener() const override { return "<tool_call>"; }
  std::string gbnf_call(const tool_rule& t) const override;
  std::string gbnf_after_opener(const std::string& call_rule, bool parallel) const override;
};

class llama3_format final : public tool_format {
 public:
  const char* name() const override { return "llama3"; }
  void parse(std::string_view text, bool partial, parsed_output& out) const override;
  std::string opener() const override { return ""; }
  std::string gbnf_call(const tool_rule& t) const override;
  std::string gbnf_after_opener(const std::string& call_rule, bool parallel) const override;
};

class mistral_format final : public tool_format {
 public:
  const char* name() const override { return "mistral"; }
  void parse(std::string_view text, bool partial, parsed_output& out) const override;
  std::string opener() const override { return "[TOOL_CALLS]"; }
  std::string gbnf_call(const tool_rule& t) const override;
  std::string gbnf_after_opener(const std::string& call_rule, bool parallel) const override;
  std::string call_id(uint64_t seed, uint32_t index) const override;
};

class deepseek_format final : public tool_format {
 public:
  const char* name() const override { return "deepseek"; }
  void parse(std::string_view text, bool partial, parsed_output& out) const override;
  bool uses_think_tags() const override { return true; }
  std::string opener() const override;
  std::string gbnf_call(const tool_rule& t) const override;
  std::string gbnf_after_opener(const std::string& call_rule, bool parallel) const override;
};

class harmony_format final : public tool_format {
 public:
  const char* name() const override { return "harmony"; }
  void parse(std::string_view text, bool partial, parsed_output& out) const override;
  bool own_reasoning() const override { return true; }
  std::string opener() const override { return "<|channel|>commentary to=functions."; }
  std::string gbnf_call(const tool_rule& t) const override;
  std::string gbnf_after_opener(const std::string& call_rule, bool parallel) const override;
  // Reasoning split off (analysis channel) unless `keep_raw`.
  void parse_channels(std::string_view text, bool partial, bool split_reasoning, parsed_output& out) const;
};

class granite_format final : public tool_format {
 public:
  const char* name() const override { return "granite"; }
  void parse(std::string_view text, bool partial, parsed_output& out) const override;
  bool uses_think_tags() const override { return true; }
  std::string opener() const override { return "<|tool_call|>"; }
  std::string gbnf_call(const tool_rule& t) const override;
  std::string gbnf_after_opener(const std::string& call_rule, bool parallel) const override;
};

class qwen3_coder_format final : public tool_format {
 public:
  const char* name() const override { return "qwen3_coder"; }
  void parse(std::string_view text, bool partial, parsed_output& out) const override;
  std::string opener() const override { return "<tool_call>"; }
  std::string gbnf_call(const tool_rule& t) const override;
  std::string gbnf_after_opener(const std::string& call_rule, bool parallel) const override;
  void set_tools(const nlohmann::ordered_json& tools) override;
  expected<std::string> gbnf_arguments(const nlohmann::ordered_json& parameters, const std::string& prefix,
                                       std::string& rules) const override;

 private:
  std::map<std::string, std::map<std::string, bool>> string_params_;  // tool -> property -> is a string
};

class functionary_format final : public tool_format {
 public:
  const char* name() const override { return "functionary"; }
  void parse(std::string_view text, bool partial, parsed_output& out) const override;
  // The generation prompt ends with ">>>": a first call needs no opener, a
  // later one (after text) starts with ">>>".
  std::string opener() const override { return ">>>"; }
  bool forced_call_writes_opener() const override { return false; }
  std::string gbnf_call(const tool_rule& t) const override;
  std::string gbnf_after_opener(const std::string& call_rule, bool parallel) const override;
};

// A JSON array of {name, arguments} objects at `pos` (Mistral v0.3,
// Granite): complete calls appended; returns the end of the array, npos
// while it is unfinished, fmt::bad when it is not such an array.
size_t parse_json_call_array(std::string_view text, size_t pos, std::vector<tool_call>& calls);

}  // namespace cortex::chat
