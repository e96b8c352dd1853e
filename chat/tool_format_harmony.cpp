// gpt-oss "harmony": the answer is a series of messages, each a header and
// a body,
//   <|channel|>analysis<|message|>Need the weather.<|end|>
//   <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
//   <|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>
// (the generation prompt ends with <|start|>assistant, so the first header
// starts at <|channel|>; the recipient may also stand before the channel).
// analysis is reasoning, a message to functions.NAME is a call, commentary
// without a recipient (a preamble) and final are content. <|call|> and
// <|return|> end generation, so the last body usually ends with the text.
#include <nlohmann/json.hpp>

#include "chat/tool_format_families.hpp"

namespace cortex::chat {

namespace {

constexpr std::string_view k_message = "<|message|>";
constexpr std::string_view k_channel = "<|channel|>";
constexpr std::string_view k_start = "<|start|>";
const std::vector<std::string_view> k_body_ends = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};

// The word after `key` in a header (up to white space or '<').
std::string header_value(std::string_view header, std::string_view key) {
  const size_t k = header.find(key);
  if (k == std::string_view::npos) return {};
  size_t b = k + key.size(), e = b;
  while (e < header.size() && header[e] != ' ' && header[e] != '<' && header[e] != '\n') ++e;
  return std::string(header.substr(b, e - b));
}

}  // namespace

void harmony_format::parse(std::string_view text, bool partial, parsed_output& out) const {
  parse_channels(text, partial, true, out);
}

void harmony_format::parse_channels(std::string_view text, bool partial, bool split_reasoning, parsed_output& out) const {
  const size_t first = fmt::skip_ws(text, 0);
  const std::string_view lead = text.substr(first);
  const bool harmony = lead.substr(0, k_channel.size()) == k_channel || lead.substr(0, k_start.size()) == k_start ||
                       lead.substr(0, 4) == "to=" || lead.substr(0, k_message.size()) == k_message;
  if (!harmony) {
    if (partial && (k_channel.substr(0, lead.size()) == lead || k_start.substr(0, lead.size()) == lead)) return;
    out.content += partial ? fmt::settled(text, {k_channel}) : text;  // a model that writes no channels
    return;
  }
  size_t pos = first;
  while (pos < text.size()) {
    const size_t m = text.find(k_message, pos);
    if (m == std::string_view::npos) return;  // a header still being written (or cut off)
    const std::string_view header = text.substr(pos, m - pos);
    const std::string channel = header_value(header, k_channel);
    const std::string recipient = header_value(header, "to=");
    const size_t b = m + k_message.size();
    size_t end = std::string_view::npos, end_len = 0;
    for (auto marker : k_body_ends) {
      const size_t e = text.find(marker, b);
      if (e < end) end = e, end_len = marker == k_start ? 0 : marker.size();
    }
    const bool complete = end != std::string_view::npos;
    std::string_view body = text.substr(b, complete ? end - b : std::string_view::npos);
    if (!complete && partial) {
      size_t hold = 0;
      for (auto marker : k_body_ends) hold = std::max(hold, fmt::partial_marker_len(body, marker));
      body = body.substr(0, body.size() - hold);
    }
    if (recipient.rfind("functions.", 0) == 0) {
      if (complete || !partial) {
        auto args = nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, false);
        if (!args.is_discarded()) out.tool_calls.push_back({"", recipient.substr(10), args.dump()});
        else if (!partial) out.content += body;
      }
    } else if (channel == "analysis" && split_reasoning) {
      out.reasoning += body;
    } else if (out.tool_calls.empty() || !fmt::is_ws_only(body)) {
      out.content += body;
    }
    if (!complete) return;
    pos = end + end_len;
    if (text.substr(pos, k_start.size()) == k_start) pos += k_start.size();
    // The role after <|start|> ("assistant") is part of the next header.
  }
}

std::string harmony_format::gbnf_call(const tool_rule& t) const {
  return fmt::gbnf_literal(t.name + " <|constrain|>json<|message|>") + " " + t.args_rule;
}

// One call: <|call|> ends generation, so a second would need another turn.
std::string harmony_format::gbnf_after_opener(const std::string& call_rule, bool) const { return call_rule; }

}  // namespace cortex::chat
