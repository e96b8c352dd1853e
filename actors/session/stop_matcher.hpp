// Finds stop strings in a stream of generated text and holds back text that
// might still turn out to be the start of one.
//
// The stream is scanned byte by byte (one KMP automaton per stop string), so
// the result never depends on how the text was split into pushes: the stop
// string that *ends* first wins; of several ending at the same byte, the
// longest (it starts earliest). The text before the match is released, the
// match and everything after it are dropped.
//
// Hold-back: after each push, the longest suffix of the text that is a proper
// prefix of some stop string is kept back (widened to a UTF-8 character
// boundary); everything before it is released. So no released text ever
// contains a stop string, and held text is at most 255 bytes for 256-byte
// stop strings.
//
// Not thread-safe (one per request). Nothing here throws or allocates beyond
// the held text and the pushed text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cortex {

class stop_matcher {
 public:
  // REQUIRES (checked by intake): each stop string is valid UTF-8. Empty
  // strings are ignored (they would match everywhere).
  explicit stop_matcher(std::vector<std::string> stops = {});

  struct result {
    std::string text;   // released: known not to be part of a stop string
    int32_t match = -1; // index into stops() of the stop string that matched, or -1
  };

  // Feeds the next piece of text (whole UTF-8 characters). After a match the
  // matcher is done: further pushes return nothing and match == -1.
  result push(std::string_view text);

  // End of the stream: no stop string can complete any more, so the held
  // text is released. Returns it and resets the held text (not the match).
  std::string flush();

  const std::string& held() const { return held_; }
  bool matched() const { return match_ >= 0; }
  int32_t match_index() const { return match_; }
  const std::vector<std::string>& stops() const { return stops_; }
  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  std::vector<std::vector<uint32_t>> fail_;  // [stop][i] KMP failure function of stops_[stop]
  std::vector<uint32_t> state_;              // [stop] bytes of stops_[stop] matched at the stream's end
  std::string held_;
  int32_t match_ = -1;
};

}  // namespace cortex
