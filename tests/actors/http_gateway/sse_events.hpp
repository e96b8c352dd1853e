// Named server-sent events (`event: NAME` + `data: JSON`) split for the
// Responses and Messages encoder tests, and a chunk of parsed chat output.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "actors/http_gateway/openai_request.hpp"
#include "messages/request.hpp"

namespace cortex::http::test {

struct sse {
  std::string event;
  nlohmann::json data;
};

inline std::vector<sse> split_events(const std::string& bytes) {
  std::vector<sse> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t end = bytes.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "an event without its blank line: " << bytes.substr(pos);
      break;
    }
    const std::string ev = bytes.substr(pos, end - pos);
    const size_t nl = ev.find('\n');
    EXPECT_EQ(ev.compare(0, 7, "event: "), 0) << ev;
    EXPECT_EQ(ev.compare(nl + 1, 6, "data: "), 0) << ev;
    out.push_back({ev.substr(7, nl - 7), nlohmann::json::parse(ev.substr(nl + 7))});
    pos = end + 2;
  }
  return out;
}

// The request limits with stories260K loaded.
inline openai_limits stories_limits() {
  openai_limits lim;
  lim.model_name = "stories260K";
  return lim;
}

inline request_chunk parts(const std::string& reasoning, const std::string& text,
                           std::vector<chat::tool_call_delta> calls = {}) {
  request_chunk c;
  c.reasoning = reasoning;
  c.text = text;
  c.tool_calls = std::move(calls);
  return c;
}

}  // namespace cortex::http::test
