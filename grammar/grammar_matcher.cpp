#include "grammar/grammar_matcher.hpp"

#include <algorithm>

namespace cortex {
namespace {

void sort_unique(std::vector<uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// The code points a UTF-8 sequence of n bytes may encode (shortest form).
uint32_t min_code_point(int n) { return n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000; }
uint32_t max_code_point(int n) { return n == 2 ? 0x7FF : n == 3 ? 0xFFFF : 0x10FFFF; }
bool is_surrogate(uint32_t c) { return c >= 0xD800 && c <= 0xDFFF; }

}  // namespace

grammar_matcher::grammar_matcher(std::shared_ptr<const grammar> g) : g_(std::move(g)) {
  nodes_.push_back({0, 0});
  expansions_.push_back({0});
  expanded_.push_back(true);
  // The root rule as if referenced from an empty stack.
  const auto& el = g_->elements();
  uint32_t a = g_->rule_start(g_->root());
  for (;;) {
    if (is_end(a)) {
      initial_.stacks.push_back(0);
    } else {
      expand_into(intern(a, 0), initial_.stacks);
    }
    while (el[a].type != gelem_type::alt && el[a].type != gelem_type::end) ++a;
    if (el[a].type == gelem_type::end) break;
    ++a;
  }
  sort_unique(initial_.stacks);
}

bool grammar_matcher::is_end(uint32_t pos) const {
  const gelem_type t = g_->elements()[pos].type;
  return t == gelem_type::end || t == gelem_type::alt;
}

uint32_t grammar_matcher::intern(uint32_t pos, uint32_t parent) {
  const uint64_t k = (static_cast<uint64_t>(pos) << 32) | parent;
  auto it = interned_.find(k);
  if (it != interned_.end()) return it->second;
  const auto id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back({pos, parent});
  expansions_.emplace_back();
  expanded_.push_back(false);
  interned_.emplace(k, id);
  return id;
}

const std::vector<uint32_t>& grammar_matcher::expand(uint32_t n) {
  static const std::vector<uint32_t> none;
  if (!expanded_[n] && depth_ >= max_expand_depth) return none;  // not remembered: a shallower call may finish it
  if (!expanded_[n]) {
    ++depth_;
    std::vector<uint32_t> out;
    const auto& el = g_->elements();
    const node nd = nodes_[n];
    if (el[nd.pos].type != gelem_type::rule_ref) {
      out.push_back(n);  // a character on top
    } else {
      const uint32_t next = nd.pos + 1;
      const uint32_t cont = is_end(next) ? nd.parent : intern(next, nd.parent);
      uint32_t a = g_->rule_start(el[nd.pos].value);
      for (;;) {
        if (is_end(a)) {
          expand_into(cont, out);  // an empty alternative: go on with what follows
        } else {
          expand_into(intern(a, cont), out);
        }
        while (el[a].type != gelem_type::alt && el[a].type != gelem_type::end) ++a;
        if (el[a].type == gelem_type::end) break;
        ++a;
      }
      sort_unique(out);
    }
    expansions_[n] = std::move(out);  // after the recursion: it may have grown expansions_
    expanded_[n] = true;
    --depth_;
  }
  return expansions_[n];
}

void grammar_matcher::expand_into(uint32_t n, std::vector<uint32_t>& out) {
  const std::vector<uint32_t>& e = expand(n);
  out.insert(out.end(), e.begin(), e.end());
}

void grammar_matcher::step_char(const std::vector<uint32_t>& stacks, uint32_t c, std::vector<uint32_t>& out) {
  for (const uint32_t n : stacks) {
    if (n == 0) continue;
    const node nd = nodes_[n];
    if (!g_->matches(nd.pos, c)) continue;
    const uint32_t next = g_->after_char(nd.pos);
    expand_into(is_end(next) ? nd.parent : intern(next, nd.parent), out);
  }
}

bool grammar_matcher::advance(const state& in, uint8_t b, state& out) {
  out.stacks.clear();
  uint32_t c;
  if (in.n_remaining == 0) {
    if (b < 0x80) {
      out.partial = 0;
      out.n_remaining = out.n_total = 0;
      step_char(in.stacks, b, out.stacks);
      sort_unique(out.stacks);
      return !out.stacks.empty();
    }
    if (b >= 0xC2 && b <= 0xDF) {
      out.n_total = 2;
      c = b & 0x1Fu;
    } else if (b >= 0xE0 && b <= 0xEF) {
      out.n_total = 3;
      c = b & 0x0Fu;
    } else if (b >= 0xF0 && b <= 0xF4) {
      out.n_total = 4;
      c = b & 0x07u;
    } else {
      return false;
    }
    out.n_remaining = static_cast<uint8_t>(out.n_total - 1);
  } else {
    if ((b & 0xC0) != 0x80) return false;
    c = (in.partial << 6) | (b & 0x3Fu);
    out.n_total = in.n_total;
    out.n_remaining = static_cast<uint8_t>(in.n_remaining - 1);
  }
  out.partial = c;
  const int n = out.n_total;
  if (out.n_remaining == 0) {
    if (c < min_code_point(n) || c > max_code_point(n) || is_surrogate(c)) return false;
    out.partial = 0;
    out.n_total = 0;
    step_char(in.stacks, c, out.stacks);
    sort_unique(out.stacks);
    return !out.stacks.empty();
  }
  // Unfinished: keep the stacks whose character could still complete it.
  const unsigned shift = 6u * out.n_remaining;
  uint32_t lo = std::max(c << shift, min_code_point(n));
  uint32_t hi = std::min((c << shift) | ((1u << shift) - 1), max_code_point(n));
  if (lo > hi) return false;
  for (const uint32_t s : in.stacks) {
    if (s == 0) continue;
    const uint32_t pos = nodes_[s].pos;
    const bool below = lo < 0xD800 && g_->matches_some(pos, lo, std::min<uint32_t>(hi, 0xD7FF));
    const bool above = hi > 0xDFFF && g_->matches_some(pos, std::max<uint32_t>(lo, 0xE000), hi);
    if (below || above) out.stacks.push_back(s);
  }
  return !out.stacks.empty();
}

bool grammar_matcher::advance(state& s, std::string_view bytes) {
  state cur = s;
  for (const char ch : bytes) {
    if (!advance(cur, static_cast<uint8_t>(ch), scratch_)) return false;
    std::swap(cur, scratch_);
  }
  s = std::move(cur);
  return true;
}

uint32_t grammar_matcher::state_id(const state& s) {
  std::string key(reinterpret_cast<const char*>(s.stacks.data()), s.stacks.size() * sizeof(uint32_t));
  key += static_cast<char>(s.n_remaining);
  key += static_cast<char>(s.n_total);
  key.append(reinterpret_cast<const char*>(&s.partial), sizeof s.partial);
  auto it = state_ids_.find(key);
  if (it != state_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(states_.size());
  states_.push_back(s);
  transitions_.emplace_back();
  state_ids_.emplace(std::move(key), id);
  return id;
}

uint32_t grammar_matcher::compute_step(uint32_t id, uint8_t byte) {
  state next;
  const uint32_t r = advance(states_[id], byte, next) ? state_id(next) : dead;
  auto& t = transitions_[id];  // after state_id(): it may have grown transitions_
  if (!t) {
    t = std::make_unique<std::array<uint32_t, 256>>();
    t->fill(unknown);
  }
  (*t)[byte] = r;
  return r;
}

void grammar_matcher::forget_states() {
  states_.clear();
  state_ids_.clear();
  transitions_.clear();
}

}  // namespace cortex
