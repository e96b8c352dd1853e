#include "actors/http_gateway/output_blocks.hpp"

#include <utility>

namespace cortex::http {

namespace {

bool only_space(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

void output_blocks::close(std::vector<block_event>& out) {
  if (!open_) return;
  open_ = false;
  out.push_back({block_event::what::close, blocks_.size() - 1, {}});
}

void output_blocks::open(output_block b, std::vector<block_event>& out) {
  close(out);
  if (b.kind != block_kind::text) held_.clear();
  blocks_.push_back(std::move(b));
  open_ = true;
  out.push_back({block_event::what::open, blocks_.size() - 1, {}});
}

void output_blocks::grow(block_kind kind, const std::string& piece, std::vector<block_event>& out) {
  if (piece.empty()) return;
  const bool same = open_ && blocks_.back().kind == kind;
  std::string text = piece;
  if (kind == block_kind::text && !same) {
    if (only_space(held_ + piece)) return void(held_ += piece);
    text = std::move(held_) + piece;
    held_.clear();
  }
  if (!same) open({kind, {}, {}, {}}, out);
  blocks_.back().text += text;
  out.push_back({block_event::what::delta, blocks_.size() - 1, std::move(text)});
}

std::vector<block_event> output_blocks::add(const std::string& reasoning, const std::string& text,
                                            const std::vector<chat::tool_call_delta>& calls) {
  std::vector<block_event> out;
  if (finished_) return out;
  grow(block_kind::reasoning, reasoning, out);
  grow(block_kind::text, text, out);
  for (const auto& d : calls) {
    auto it = call_of_.find(d.index);
    if (it == call_of_.end()) {
      open({block_kind::tool_call, {}, d.id, d.name}, out);
      it = call_of_.emplace(d.index, blocks_.size() - 1).first;
      ++n_calls_;
    } else if (it->second != blocks_.size() - 1 || !open_) {
      continue;  // a piece of a call already closed: the parser never sends one
    }
    if (d.arguments.empty()) continue;
    blocks_[it->second].text += d.arguments;
    out.push_back({block_event::what::delta, it->second, d.arguments});
  }
  return out;
}

std::vector<block_event> output_blocks::finish(const request_finished& f) {
  std::vector<block_event> out;
  if (finished_) return out;
  out = add(f.reasoning, f.text, {});
  for (const auto& c : f.tool_calls) {
    open({block_kind::tool_call, {}, c.id, c.name}, out);
    ++n_calls_;
    if (c.arguments.empty()) continue;
    blocks_.back().text = c.arguments;
    out.push_back({block_event::what::delta, blocks_.size() - 1, c.arguments});
  }
  if (blocks_.empty() && !held_.empty()) {
    open({block_kind::text, held_, {}, {}}, out);
    out.push_back({block_event::what::delta, 0, std::move(held_)});
  }
  close(out);
  finished_ = true;
  return out;
}

}  // namespace cortex::http
