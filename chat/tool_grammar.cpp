#include "chat/tool_grammar.hpp"

#include "grammar/gbnf_compose.hpp"
#include "grammar/json_schema.hpp"

namespace cortex::chat {

expected<std::string> tool_call_gbnf(const tool_format& f, const nlohmann::ordered_json& tools, tool_choice_mode mode,
                                     const std::string& only, bool parallel) {
  if (mode == tool_choice_mode::none) return std::string();
  const std::string opener = f.opener();
  if (mode == tool_choice_mode::auto_ && opener.empty()) return std::string();
  std::string rules, call_alts;
  size_t i = 0;
  for (const auto& t : tools) {
    const auto* fn = t.is_object() && t.contains("function") ? &t["function"] : nullptr;
    if (!fn || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
      return fail(errc::invalid_param, "tools[" + std::to_string(i) + "] is not {type: \"function\", function: {name, parameters}}");
    const std::string name = (*fn)["name"].get<std::string>();
    ++i;
    if (mode == tool_choice_mode::named && name != only) continue;
    const std::string prefix = "t" + std::to_string(i - 1) + "-";
    if (fn->contains("parameters")) {  // a family with an argument syntax of its own
      auto own = f.gbnf_arguments((*fn)["parameters"], prefix, rules);
      if (!own) return fail(errc::invalid_param, "tools[" + std::to_string(i - 1) + "].function.parameters (" + name + "): " + own.error().message);
      if (!own->empty()) {
        call_alts += (call_alts.empty() ? "" : " | ") + std::string("(") + f.gbnf_call({name, *own}) + ")";
        continue;
      }
    }
    std::string schema_gbnf;
    if (fn->contains("parameters") && !(*fn)["parameters"].is_null()) {
      auto g = json_schema_to_gbnf((*fn)["parameters"].dump());
      if (!g) return fail(errc::invalid_param, "tools[" + std::to_string(i - 1) + "].function.parameters (" + name + "): " + g.error().message);
      schema_gbnf = std::move(*g);
    } else {
      schema_gbnf = json_object_gbnf();
    }
    rules += gbnf_prefix_rules(schema_gbnf, prefix);
    call_alts += (call_alts.empty() ? "" : " | ") + std::string("(") + f.gbnf_call({name, prefix + "root"}) + ")";
  }
  if (call_alts.empty()) {
    if (mode == tool_choice_mode::named) return fail(errc::invalid_param, "tool_choice names the function '" + only + "', which is not in tools");
    return fail(errc::invalid_param, "tool_choice is \"required\" but tools is empty");
  }
  std::string g = "tool-call ::= " + call_alts + "\n";
  const std::string after = f.gbnf_after_opener("tool-call", parallel && mode != tool_choice_mode::named);
  if (mode == tool_choice_mode::auto_) {
    g = "root ::= free-0\n" + gbnf_text_until(opener, "free-", after, /*allow_end=*/true) + g;
  } else {
    const bool lead = !opener.empty() && f.forced_call_writes_opener();
    g = "root ::= " + (lead ? fmt::gbnf_literal(opener) + " " : std::string()) + after + "\n" + g;
  }
  return g + rules;
}

std::string wrap_after_think(const std::string& gbnf) {
  return "root ::= think-0\n" +
         gbnf_text_until("</think>", "think-", "[ \\t\\n]{0,4} answer-root", /*allow_end=*/false) +
         gbnf_prefix_rules(gbnf, "answer-");
}

}  // namespace cortex::chat
