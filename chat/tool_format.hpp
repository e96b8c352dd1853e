// A model family's tool-call syntax: how its answers are parsed into text
// and calls, and how a forced call is written as a grammar. One class per
// family, each in its own file (tool_format_<family>.cpp); the family is
// detected from the chat template (detect_tool_format) or named with
// `cortexd --tool-format NAME`.
//
// Parsing contract (parse): `text` is the answer region (what follows the
// reasoning, if any). With `partial` (more text may come) the result holds
// only what is settled: text that might still become part of a call opener
// (a proper prefix of it, or whitespace before it) is held back, and only
// calls that are complete are returned; without `partial` everything is
// decided (a call whose end never came is kept if its arguments are whole
// JSON, else its text is content). Content of a later parse of a longer text
// always extends the content of an earlier one, and calls only get added:
// the stream parser (output_parser) diffs consecutive parses. Ids are not
// set here (output_parser names the calls).
//
// Thread: stateless and immutable; share freely.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_output.hpp"
#include "base/expected.hpp"

namespace cortex::chat {

// A tool as a forced-call grammar sees it: its name and the GBNF rule that
// generates its arguments (a JSON object following its parameters schema).
struct tool_rule {
  std::string name;
  std::string args_rule;
};

class tool_format {
 public:
  virtual ~tool_format() = default;
  virtual const char* name() const = 0;

  // See the contract above.
  virtual void parse(std::string_view text, bool partial, parsed_output& out) const = 0;

  // The family splits reasoning itself (harmony's analysis channel) instead
  // of <think> blocks.
  virtual bool own_reasoning() const { return false; }
  // The reasoning markers this family's think blocks use, when it has them.
  virtual bool uses_think_tags() const { return false; }

  // Grammar. The literal a call starts with, where generation may switch
  // from free text to a call (auto's lazy grammar); empty: the family's
  // calls cannot start mid-text, and auto stays unconstrained.
  virtual std::string opener() const = 0;
  // Whether a forced call (required / named) starts with the opener; false
  // where the generation prompt already ends with it (Functionary's ">>>").
  virtual bool forced_call_writes_opener() const { return true; }
  // GBNF (an expression) for one call of `t`, without the opener.
  virtual std::string gbnf_call(const tool_rule& t) const = 0;
  // GBNF (an expression) of what follows the opener: one call
  // (`call_rule` names the rule of the alternatives of gbnf_call), or
  // up to 4 when `parallel` (a bound, so that a small model that never
  // chooses to stop still ends in a complete answer).
  virtual std::string gbnf_after_opener(const std::string& call_rule, bool parallel) const = 0;

  // The offered tools (OpenAI function tools), for a family whose values'
  // types come from the schemas (qwen3_coder). Default: unused.
  virtual void set_tools(const nlohmann::ordered_json&) {}
  // A family that writes arguments in a syntax of its own: rules (appended
  // to `rules`, names starting with `prefix`) for the arguments of a tool
  // with these `parameters`, returning the expression that starts them
  // (it then stands where gbnf_call's args_rule does). Empty: the
  // arguments are a JSON object (the schema's own grammar).
  virtual expected<std::string> gbnf_arguments(const nlohmann::ordered_json& parameters, const std::string& prefix,
                                               std::string& rules) const {
    (void)parameters, (void)prefix, (void)rules;
    return std::string();
  }

  // Ids given to the calls of this family (Mistral's templates ask for 9
  // alphanumerics); `seed` makes them unique per request, `index` per call.
  virtual std::string call_id(uint64_t seed, uint32_t index) const;
};

// The known families: hermes (Hermes 2/3, Qwen 2.5, Qwen 3 and templates
// with no syntax of their own), llama3 (Llama 3.1-3.3 JSON and
// <|python_tag|>), mistral ([TOOL_CALLS]), deepseek (V3 / R1 call tokens),
// harmony (gpt-oss), granite (<|tool_call|>), qwen3_coder (XML-style
// <function=NAME><parameter=P> calls).
std::unique_ptr<tool_format> make_tool_format(std::string_view name);
const std::vector<std::string>& tool_format_names();

// The family a chat template writes calls in (its distinctive markers), and
// whether its turns carry <think> reasoning. Templates with no tool syntax
// of their own get hermes (http.md).
struct template_traits {
  std::string format;           // a tool_format_names() entry
  bool think_tags = false;      // the template writes <think> ... </think>
  bool renders_tools = false;   // the template reads `tools` (else the tools go in a system preamble)
};
template_traits detect_template_traits(std::string_view template_text);

// Helpers shared by the families (chat/tool_format_util.cpp).
namespace fmt {
// The end (exclusive) of the JSON value starting at or after `pos` (after
// white space): npos if the text ends first; `bad` if it is not JSON.
constexpr size_t bad = static_cast<size_t>(-2);
size_t json_value_end(std::string_view s, size_t pos);
// The length of the longest suffix of `s` that is a proper prefix of `marker`.
size_t partial_marker_len(std::string_view s, std::string_view marker);
size_t skip_ws(std::string_view s, size_t pos);
std::string_view rtrim(std::string_view s);
bool is_ws_only(std::string_view s);
// Settled text of a partial parse: `s` without a suffix that might start
// one of `markers`, and without trailing white space (which might precede one).
std::string_view settled(std::string_view s, const std::vector<std::string_view>& markers);
// Content around tagged calls (hermes, qwen3_coder): text before a call is
// kept right-trimmed while no call came yet, and afterwards only when it is
// more than white space; the tail after the last call likewise (settled
// against `opener` while partial).
void add_text_before_call(std::string_view before, parsed_output& out);
void add_tail_text(std::string_view tail, bool partial, std::string_view opener, parsed_output& out);
// A call from a JSON object {name, <args_key>}: arguments compact JSON text
// (a string value is kept as it is). False when it is not such an object.
bool call_from_json(std::string_view json_text, const std::vector<std::string>& args_keys, tool_call& out);
// A GBNF string literal for `s`.
std::string gbnf_literal(std::string_view s);
}  // namespace fmt

}  // namespace cortex::chat
