// Generated text -> content, reasoning and tool calls, as it streams
// (http.md "Tool and reasoning rules").
//
// Reasoning: with think tags, a <think> block at the start of the answer
// (after white space), or from the first byte when the generation prompt
// opened it, is reasoning; a block still open at the end is reasoning too.
// Harmony (gpt-oss) splits its analysis channel itself. With
// split_reasoning off (reasoning_format none) nothing is split: the raw
// text is content (tool calls are still parsed, after any reasoning).
//
// Streaming: push() the text as it comes (any split, down to one byte);
// each returns what became settled (output_delta): content and reasoning
// only grow, a call is sent whole (id, name and all its arguments in one
// delta) once its end is seen, and text that may still become a call's
// opener is never sent as content. finish() settles the rest. The deltas
// of a stream concatenate to result(), unless the end changed an earlier
// reading (a call that never closed turned back to text: then its text
// follows the content already sent).
//
// Not thread-safe; one per request. Nothing here throws.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "chat/chat_output.hpp"
#include "chat/tool_format.hpp"

namespace cortex::chat {

struct output_options {
  std::string format = "hermes";  // tool_format_names()
  bool parse_tool_calls = false;  // tools were offered: calls are parsed
  bool think_tags = false;        // <think> blocks are reasoning
  bool thinking_open = false;     // the generation prompt opened a <think> block
  bool split_reasoning = true;    // reasoning_format auto (false: none)
  uint64_t id_seed = 0;           // makes the call ids unique per request
  std::string tools_json;         // the offered tools (a family may read value types from them)
};

class output_parser {
 public:
  // An unknown format name is read as hermes.
  explicit output_parser(output_options o);

  output_delta push(std::string_view text);
  output_delta finish();
  // The whole message parsed so far (after finish(): final), ids set.
  const parsed_output& result() const { return emitted_; }
  const std::string& text() const { return text_; }

 private:
  parsed_output parse(bool partial) const;
  output_delta advance(parsed_output now, bool final);

  output_options opt_;
  std::unique_ptr<tool_format> format_;
  std::string text_;
  parsed_output emitted_;
  bool finished_ = false;
};

// The whole of `text` at once (a non-streamed answer).
parsed_output parse_output(const output_options& o, std::string_view text);

}  // namespace cortex::chat
