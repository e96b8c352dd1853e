#include "actors/session/stop_matcher.hpp"

#include <algorithm>
#include <utility>

namespace cortex {
namespace {

bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// fail[i]: length of the longest proper prefix of s[0..i] that is also its suffix.
std::vector<uint32_t> kmp_failure(const std::string& s) {
  std::vector<uint32_t> fail(s.size(), 0);
  uint32_t k = 0;
  for (size_t i = 1; i < s.size(); ++i) {
    while (k > 0 && s[i] != s[k]) k = fail[k - 1];
    if (s[i] == s[k]) ++k;
    fail[i] = k;
  }
  return fail;
}

}  // namespace

stop_matcher::stop_matcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (s.empty()) continue;
    fail_.push_back(kmp_failure(s));
    stops_.push_back(std::move(s));
  }
  state_.assign(stops_.size(), 0);
}

stop_matcher::result stop_matcher::push(std::string_view text) {
  result r;
  if (matched()) return r;
  if (stops_.empty()) {
    r.text.assign(text);
    return r;
  }
  std::string buf = std::move(held_);
  held_.clear();
  const size_t base = buf.size();
  buf.append(text);

  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    int32_t best = -1;
    size_t best_len = 0;
    for (size_t s = 0; s < stops_.size(); ++s) {
      const std::string& stop = stops_[s];
      uint32_t st = state_[s];
      while (st > 0 && stop[st] != c) st = fail_[s][st - 1];
      if (stop[st] == c) ++st;
      if (st == stop.size()) {
        if (stop.size() > best_len) {
          best = static_cast<int32_t>(s);
          best_len = stop.size();
        }
        st = fail_[s][st - 1];
      }
      state_[s] = st;
    }
    if (best >= 0) {
      // The match lies inside buf: before this push, held_ covered at least
      // the longest partial match (see the hold-back below).
      const size_t end = base + i + 1;
      match_ = best;
      r.match = best;
      r.text = buf.substr(0, end - best_len);
      return r;
    }
  }

  uint32_t hold = 0;
  for (uint32_t st : state_) hold = std::max(hold, st);
  size_t cut = buf.size() - std::min<size_t>(hold, buf.size());
  while (cut > 0 && cut < buf.size() && is_utf8_continuation(buf[cut])) --cut;
  held_ = buf.substr(cut);
  buf.resize(cut);
  r.text = std::move(buf);
  return r;
}

std::string stop_matcher::flush() {
  std::string out = std::move(held_);
  held_.clear();
  std::fill(state_.begin(), state_.end(), 0u);
  return out;
}

}  // namespace cortex
