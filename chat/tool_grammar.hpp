// Grammars of constrained tool calls (issue 27, item 3), in a family's own
// call syntax, from the tools' JSON-schema `parameters`
// (grammar/json_schema.hpp): every string the grammar generates parses
// (tool_format::parse) into calls of the offered tools whose arguments
// validate against their schemas.
//
//   required / a named tool: the answer is calls, from its first byte.
//   auto: free text until the family's opener, then calls (a lazy grammar);
//         a family whose calls cannot start mid-text (llama3) gets none.
//
// And the reasoning rule of http.md: a grammar applies after a reasoning
// block the generation prompt opened (wrap_after_think).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "chat/tool_format.hpp"
#include "base/expected.hpp"

namespace cortex::chat {

enum class tool_choice_mode : uint8_t { none, auto_, required, named };

// `tools`: OpenAI function tools [{type: "function", function: {name,
// description, parameters}}]. `only` names the one tool of a named choice.
// Errors (invalid_param) name the tool and the schema problem. Returns an
// empty string when there is nothing to constrain (auto for a family with
// no mid-text opener).
expected<std::string> tool_call_gbnf(const tool_format& f, const nlohmann::ordered_json& tools, tool_choice_mode mode,
                                     const std::string& only, bool parallel);

// `gbnf` applied after "</think>" (and the white space after it): the text
// before is free reasoning (it may not end there).
std::string wrap_after_think(const std::string& gbnf);

}  // namespace cortex::chat
