// What a chat model's generated text means: the answer (content), the
// reasoning of a thinking model, and the tool calls it made, whole or as
// the deltas of a stream. Plain types with no CAF and no gateway in them:
// the HTTP gateway's chat completions, Responses and Messages mappings and
// the wire codec all map these same values (http.md "Tool and reasoning
// rules", protocol.md `chunk.reasoning` / `chunk.tool_calls`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cortex::chat {

// One complete call. `arguments` is JSON text (an object, compact, keys in
// the order the model wrote them).
struct tool_call {
  std::string id;
  std::string name;
  std::string arguments;
  bool operator==(const tool_call& o) const { return id == o.id && name == o.name && arguments == o.arguments; }
};

// A message parsed from generated text.
struct parsed_output {
  std::string content;    // the answer; for a message with calls, the text before them
  std::string reasoning;  // thinking text; empty: none
  std::vector<tool_call> tool_calls;
};

// A piece of a call in a stream: `id` and `name` on the call's first delta,
// `arguments` a piece of its JSON text; the pieces of one index concatenate
// to the call's arguments.
struct tool_call_delta {
  uint32_t index = 0;
  std::string id;
  std::string name;
  std::string arguments;
  bool operator==(const tool_call_delta& o) const {
    return index == o.index && id == o.id && name == o.name && arguments == o.arguments;
  }
};

// What one push of generated text added. The concatenation of every delta's
// content (reasoning) is the parsed message's content (reasoning).
struct output_delta {
  std::string content;
  std::string reasoning;
  std::vector<tool_call_delta> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

}  // namespace cortex::chat
