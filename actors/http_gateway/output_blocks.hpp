// A chat answer as the ordered blocks the Responses API (output items) and
// the Anthropic Messages API (content blocks) both return: reasoning, text
// and tool calls, each opened, grown and closed as the engine's parsed
// output (chat/chat_output.hpp, carried by request_chunk / request_finished)
// arrives. Both mappings render these same events; neither parses text.
// CAF-free; nothing throws; not thread-safe (one per response).
//
// Rules:
//   - One step's output is taken in the order the model writes it:
//     reasoning, then content, then calls. A piece of another kind than
//     the open block closes it and opens a new block; pieces of the open
//     block's kind grow it. A call's pieces (same index) grow its block.
//   - Text that is only whitespace is held until text with something else
//     follows (it then opens or grows the text block), so the "\n\n" between
//     a reasoning block and a call makes no empty-looking block. Held text is
//     dropped when another block opens, and flushed at the end only into an
//     answer that has no block at all.
//   - finish() adds the terminal event's output (the rest of it when
//     streaming, all of it when not; its calls are whole calls, after those
//     the chunks carried) and closes the open block. After finish(), add()
//     and finish() return nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "chat/chat_output.hpp"
#include "messages/request.hpp"

namespace cortex::http {

enum class block_kind : uint8_t { reasoning, text, tool_call };

struct output_block {
  block_kind kind = block_kind::text;
  std::string text;     // reasoning or text; a call's arguments (JSON text)
  std::string call_id;  // tool_call
  std::string name;     // tool_call
};

struct block_event {
  enum class what : uint8_t { open, delta, close };
  what type = what::open;
  size_t block = 0;   // index into output_blocks::blocks()
  std::string delta;  // what: delta
};

class output_blocks {
 public:
  std::vector<block_event> add(const std::string& reasoning, const std::string& text,
                               const std::vector<chat::tool_call_delta>& calls);
  std::vector<block_event> finish(const request_finished& f);

  const std::vector<output_block>& blocks() const { return blocks_; }
  bool has_tool_calls() const { return n_calls_ > 0; }

 private:
  void grow(block_kind kind, const std::string& piece, std::vector<block_event>& out);
  void open(output_block b, std::vector<block_event>& out);
  void close(std::vector<block_event>& out);

  std::vector<output_block> blocks_;
  bool open_ = false;                   // the last block is open
  std::map<uint32_t, size_t> call_of_;  // a streamed call's index -> its block
  size_t n_calls_ = 0;
  std::string held_;  // whitespace-only text not yet in a block
  bool finished_ = false;
};

}  // namespace cortex::http
