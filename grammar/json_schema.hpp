// JSON Schema -> GBNF (grammar.hpp), for structured outputs: every string
// the grammar generates is a JSON document the schema validates, within the
// subset below; a keyword outside it is an error naming the keyword and where
// it is (invalid_param, a 400 to the client).
//
// Supported: type (one or a list), properties + required (properties come in
// the schema's order; optional ones may be left out), additionalProperties
// (false, or a schema when there are no properties: a map of that schema;
// with properties no extra key is ever generated, which every value of
// additionalProperties allows), enum, const, items, minItems, maxItems,
// minLength, maxLength, pattern (a regular-expression subset: literals, .,
// classes, \d \w \s, groups, |, * + ? {m,n}, anchors; generated as a full
// match, which satisfies the unanchored search JSON Schema asks for),
// format (date, time, date-time, uuid), minimum, maximum, exclusiveMinimum,
// exclusiveMaximum (integers exactly; numbers within the bounds), anyOf,
// oneOf (as anyOf: make its branches disjoint), $ref to "#", "#/$defs/..."
// or "#/definitions/...", nested objects and arrays; annotations (title,
// description, default, examples, $schema, $id, $comment...) are ignored.
//
// Whitespace between tokens is bounded (one space, or a newline and up to
// 6 spaces or tabs, at a place) and there is none after the document: a
// small model cannot pad forever (stories260K, unbounded, spends its whole
// budget on spaces), and the end of generation is the only way on once the
// document closes.
// Numbers have at most 16 integer and 16 fraction digits.
#pragma once

#include <string>
#include <string_view>

#include "base/expected.hpp"

namespace cortex {

// schema_json: a JSON Schema as JSON text. Returns GBNF text whose `root`
// generates the documents.
expected<std::string> json_schema_to_gbnf(std::string_view schema_json);

// The grammar of any JSON object (response_format json_object).
std::string json_object_gbnf();

}  // namespace cortex
