#include "model/grammar/grammar.hpp"

#include <functional>

namespace cortex {
namespace {

// Left recursion (a rule reachable from itself without consuming a
// character) would make the matcher's expansion loop: find it up front.
status check_left_recursion(const grammar::rules& r) {
  const size_t n = r.body.size();
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < n; ++k) {
      if (nullable[k]) continue;
      bool alt_nullable = true;
      for (const gelem& e : r.body[k]) {
        if (e.type == gelem_type::alt || e.type == gelem_type::end) {
          if (alt_nullable) {
            nullable[k] = changed = true;
            break;
          }
          alt_nullable = true;
        } else if (e.type != gelem_type::rule_ref || !nullable[e.value]) {
          alt_nullable = false;
        }
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
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::string cycle;
  std::function<bool(uint32_t)> visit = [&](uint32_t k) {
    color[k] = 1;
    for (uint32_t to : first[k]) {
      if (color[to] == 1) {
        cycle = r.names[to];
        return true;
      }
      if (color[to] == 0 && visit(to)) return true;
    }
    color[k] = 2;
    return false;
  };
  for (uint32_t k = 0; k < n; ++k) {
    if (color[k] == 0 && visit(k)) {
      return fail(errc::invalid_param, "grammar: rule '" + cycle +
                                           "' is left-recursive (it can reach itself before matching a character); "
                                           "rewrite it with repetition, e.g. x ::= y (\",\" y)*");
    }
  }
  return status::ok();
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
    g->elems_.insert(g->elems_.end(), r.body[k].begin(), r.body[k].end());
    if (r.names[k] == "root") g->root_ = static_cast<uint32_t>(k);
  }
  g->names_ = std::move(r.names);
  return std::shared_ptr<const grammar>(std::move(g));
}

bool grammar::matches(uint32_t pos, uint32_t c) const { return matches_some(pos, c, c); }

bool grammar::matches_some(uint32_t pos, uint32_t lo, uint32_t hi) const {
  const gelem* e = &elems_[pos];
  if (e->type == gelem_type::chr_any) return true;
  const bool negated = e->type == gelem_type::chr_not;
  if (!negated) {
    for (;;) {
      const uint32_t a = e->value;
      const uint32_t b = e[1].type == gelem_type::rng_upper ? e[1].value : a;
      if (a <= hi && lo <= b) return true;
      e += e[1].type == gelem_type::rng_upper ? 2 : 1;
      if (e->type != gelem_type::chr_alt) return false;
    }
  }
  // Negated: some code point of [lo, hi] outside every listed range. Walk
  // up from lo, jumping past any range that covers the candidate.
  uint64_t cand = lo;
  for (bool moved = true; moved && cand <= hi;) {
    moved = false;
    for (const gelem* x = e;;) {
      const uint32_t a = x->value;
      const uint32_t b = x[1].type == gelem_type::rng_upper ? x[1].value : a;
      if (a <= cand && cand <= b) {
        cand = static_cast<uint64_t>(b) + 1;
        moved = true;
      }
      x += x[1].type == gelem_type::rng_upper ? 2 : 1;
      if (x->type != gelem_type::chr_alt) break;
    }
  }
  return cand <= hi;
}

uint32_t grammar::after_char(uint32_t pos) const {
  ++pos;
  while (elems_[pos].type == gelem_type::rng_upper || elems_[pos].type == gelem_type::chr_alt) ++pos;
  return pos;
}

}  // namespace cortex
