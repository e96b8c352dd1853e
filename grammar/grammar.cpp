#include "grammar/grammar.hpp"

#include <algorithm>
#include <utility>

namespace cortex {
namespace {

// Left recursion (a rule reachable from itself without consuming a
// character) would make the matcher's expansion loop: find it up front.
status check_left_recursion(const grammar::rules& r) {
  const size_t n = r.body.size();
  // Nullable rules (some alternative derives ""), in time linear in the
  // grammar: an alternative made only of rule references waits for that
  // many of them to turn nullable; a rule turns nullable when one of its
  // alternatives has nothing left to wait for.
  std::vector<bool> nullable(n, false);
  std::vector<uint32_t> alt_rule;                    // [alternative] its rule
  std::vector<uint32_t> waiting;                     // [alternative] references not yet nullable
  std::vector<std::vector<uint32_t>> waiters(n);     // [rule] alternatives referring to it, once per reference
  std::vector<uint32_t> ready;                       // rules newly nullable, to propagate
  std::vector<uint32_t> refs;  // the current alternative's references
  for (size_t k = 0; k < n; ++k) {
    bool chars = false;  // the current alternative matches a character
    refs.clear();
    for (const gelem& e : r.body[k]) {
      if (e.type == gelem_type::alt || e.type == gelem_type::end) {
        if (!chars) {
          const auto alt = static_cast<uint32_t>(alt_rule.size());
          alt_rule.push_back(static_cast<uint32_t>(k));
          waiting.push_back(static_cast<uint32_t>(refs.size()));
          for (uint32_t to : refs) waiters[to].push_back(alt);
          if (refs.empty() && !nullable[k]) {
            nullable[k] = true;
            ready.push_back(static_cast<uint32_t>(k));
          }
        }
        chars = false;
        refs.clear();
      } else if (e.type == gelem_type::rule_ref) {
        refs.push_back(e.value);
      } else {
        chars = true;
      }
    }
  }
  while (!ready.empty()) {
    const uint32_t k = ready.back();
    ready.pop_back();
    for (const uint32_t a : waiters[k]) {
      if (--waiting[a] == 0 && !nullable[alt_rule[a]]) {
        nullable[alt_rule[a]] = true;
        ready.push_back(alt_rule[a]);
      }
    }
  }
  // Edges k -> rules that can start an alternative of k.
  std::vector<std::vector<uint32_t>> first(n);
  for (size_t k = 0; k < n; ++k) {
    bool open = true;  // still at a nullable prefix of the alternative
    for (const gelem& e : r.body[k]) {
      if (e.type == gelem_type::alt || e.type == gelem_type::end) {
        open = true;
      } else if (open && e.type == gelem_type::rule_ref) {
        first[k].push_back(e.value);
        open = nullable[e.value];
      } else if (e.type != gelem_type::rng_upper && e.type != gelem_type::chr_alt) {
        open = false;
      }
    }
  }
  // A cycle in those edges, by depth-first search with an explicit stack
  // (a chain of 100k rules must not recurse 100k frames deep).
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<uint32_t, size_t>> path;  // (rule, next edge)
  for (uint32_t s = 0; s < n; ++s) {
    if (color[s] != 0) continue;
    color[s] = 1;
    path.emplace_back(s, 0);
    while (!path.empty()) {
      auto& [k, i] = path.back();
      if (i == first[k].size()) {
        color[k] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t to = first[k][i++];
      if (color[to] == 1) {
        return fail(errc::invalid_param, "grammar: rule '" + r.names[to] +
                                             "' is left-recursive (it can reach itself before matching a character); "
                                             "rewrite it with repetition, e.g. x ::= y (\",\" y)*");
      }
      if (color[to] == 0) {
        color[to] = 1;
        path.emplace_back(to, 0);
      }
    }
  }
  return status::ok();
}

// A character class run (chr | chr_not, then rng_upper / chr_alt elements
// in any order, overlapping or not) rewritten as its sorted, merged ranges,
// each a pair (lower, rng_upper upper): `first` a0, rng_upper b0, chr_alt
// a1, rng_upper b1, ... with b_i + 1 < a_{i+1}. Matching is then a binary
// search, whatever the class's size.
void canonical_class(const gelem* run, const gelem* run_end, std::vector<gelem>& out) {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (const gelem* e = run; e != run_end;) {
    const uint32_t a = e->value;
    const bool range = e + 1 != run_end && e[1].type == gelem_type::rng_upper;
    ranges.emplace_back(a, range ? e[1].value : a);
    e += range ? 2 : 1;
  }
  std::sort(ranges.begin(), ranges.end());
  const gelem_type first = run->type;
  size_t n_out = 0;
  for (const auto& [a, b] : ranges) {
    if (n_out > 0 && static_cast<uint64_t>(a) <= static_cast<uint64_t>(out.back().value) + 1) {
      out.back().value = std::max(out.back().value, b);
      continue;
    }
    out.push_back({n_out == 0 ? first : gelem_type::chr_alt, a});
    out.push_back({gelem_type::rng_upper, b});
    ++n_out;
  }
}

}  // namespace

expected<std::shared_ptr<const grammar>> grammar::compile(std::string_view gbnf) {
  auto r = parse_gbnf(gbnf);
  if (!r) return r.error();
  return from_rules(std::move(*r));
}

expected<std::shared_ptr<const grammar>> grammar::from_rules(rules r) {
  if (status s = check_left_recursion(r); !s) return s;
  auto g = std::make_shared<grammar>();
  for (size_t k = 0; k < r.body.size(); ++k) {
    g->starts_.push_back(static_cast<uint32_t>(g->elems_.size()));
    const std::vector<gelem>& body = r.body[k];
    for (size_t i = 0; i < body.size();) {
      const gelem_type t = body[i].type;
      if (t != gelem_type::chr && t != gelem_type::chr_not) {
        g->elems_.push_back(body[i++]);
        continue;
      }
      size_t j = i + 1;
      while (j < body.size() && (body[j].type == gelem_type::rng_upper || body[j].type == gelem_type::chr_alt)) ++j;
      const auto at = static_cast<uint32_t>(g->elems_.size());
      canonical_class(body.data() + i, body.data() + j, g->elems_);
      g->class_end_.resize(g->elems_.size(), 0);
      g->class_end_[at] = static_cast<uint32_t>(g->elems_.size());
      i = j;
    }
    if (r.names[k] == "root") g->root_ = static_cast<uint32_t>(k);
  }
  g->class_end_.resize(g->elems_.size(), 0);
  g->names_ = std::move(r.names);
  return std::shared_ptr<const grammar>(std::move(g));
}

bool grammar::matches(uint32_t pos, uint32_t c) const { return matches_some(pos, c, c); }

bool grammar::matches_some(uint32_t pos, uint32_t lo, uint32_t hi) const {
  const gelem* e = &elems_[pos];
  if (e->type == gelem_type::chr_any) return true;
  // The run's ranges [a_i, b_i] are sorted and disjoint: find the first
  // that ends at or after lo.
  size_t l = 0, h = (class_end_[pos] - pos) / 2;
  while (l < h) {
    const size_t m = (l + h) / 2;
    if (e[2 * m + 1].value < lo) {
      l = m + 1;
    } else {
      h = m;
    }
  }
  const size_t n = (class_end_[pos] - pos) / 2;
  if (e->type != gelem_type::chr_not) return l < n && e[2 * l].value <= hi;
  // Negated: some code point of [lo, hi] lies outside every range, unless
  // one range covers all of it (ranges neither touch nor overlap).
  return !(l < n && e[2 * l].value <= lo && hi <= e[2 * l + 1].value);
}

uint32_t grammar::after_char(uint32_t pos) const { return elems_[pos].type == gelem_type::chr_any ? pos + 1 : class_end_[pos]; }

}  // namespace cortex
