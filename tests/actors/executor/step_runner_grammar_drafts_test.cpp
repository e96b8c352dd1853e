// step_runner's verify path under a grammar, against a brute-force check
// over the whole vocabulary (tests/support/grammar_brute_force.hpp): on
// stories260K, greedy and sampled, each step carries drafts that are the
// model's unconstrained greedy continuation (mostly forbidden by the
// grammar: capitals, commas), grammar-valid random walks, valid walks
// broken by a forbidden token, and (greedy) the constrained greedy text
// itself. Every token the step returns must be one the brute force allows
// at its position, given the tokens returned before it; every token but the
// last must be the draft at its position (accepted); the text is a document
// of the grammar when an end token closed it, a viable prefix otherwise.
// Greedy output must also equal the constrained greedy run without drafts.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actors/executor/step_runner.hpp"
#include "model/model.hpp"
#include "tests/actors/stories_model.hpp"
#include "tests/actors/stories_tokenizer.hpp"
#include "tests/support/grammar_brute_force.hpp"

namespace cortex {
namespace {

using tokens = std::vector<int32_t>;
using testing::brute_force_allows;

constexpr int k_block_size = 16;
constexpr int k_n_blocks = 24;  // 384 positions
constexpr int k_n_generate = 48;
constexpr int32_t k_max_draft = 6;

std::shared_ptr<const model> stories() { return testing_support::stories_model(); }

executor_config arena() {
  executor_config c;
  c.n_threads = 1;
  c.n_kv_blocks = k_n_blocks;
  c.block_size = k_block_size;
  c.kv_type = kernels::kv_type::f32;
  return c;
}

// Lowercase words (the stories' text breaks it at every capital and
// comma), a fixed record with capitals and digits, and a small JSON shape.
const std::vector<std::string>& grammars() {
  static const std::vector<std::string> k = {
      R"(root ::= [a-z]+ (" " [a-z]+)* ".")",
      R"(root ::= "name: " [A-Z] [a-z]{1,8} ", age: " [1-9] [0-9]? "\n")",
      R"(root ::= "{\"who\": \"" [a-zA-Z ]{1,30} "\", \"tags\": [" ("\"" [a-z]+ "\"" (", \"" [a-z]+ "\"")*)? "]}")",
  };
  return k;
}

step_entry entry(request_id rid, tokens t, int32_t pos0, int32_t n_draft) {
  step_entry e;
  e.rid = rid;
  e.pos0 = pos0;
  const int32_t n_pos = pos0 + static_cast<int32_t>(t.size());
  for (int32_t b = 0; b * k_block_size < n_pos; ++b) e.block_table.push_back(b);
  e.tokens = std::move(t);
  e.sample = true;
  e.n_draft = n_draft;
  return e;
}

sequence_open open_of(request_id rid, const tokens& prompt, const std::string& grammar, float temperature, uint64_t seed) {
  sequence_open o;
  o.rid = rid;
  o.params.grammar = grammar;
  o.params.temperature = temperature;
  o.seed = seed;
  o.tokens_prompt = prompt;
  return o;
}

// Runs one step of `rid` on r: prefill or decode of `known`'s uncomputed
// tail with `draft` after it; returns the tokens answered.
tokens run_step(step_runner& r, uint64_t& step_id, request_id rid, const tokens& known, int32_t n_computed, const tokens& draft) {
  engine_step s;
  s.step_id = step_id++;
  tokens t(known.begin() + n_computed, known.end());
  t.insert(t.end(), draft.begin(), draft.end());
  s.entries.push_back(entry(rid, t, n_computed, static_cast<int32_t>(draft.size())));
  const engine_step_result res = r.run(s);
  EXPECT_FALSE(res.failed()) << res.error.message;
  tokens out;
  for (const auto& o : res.outputs) out.push_back(o.token);
  return out;
}

// The model's greedy continuation of `known` without a grammar, n tokens
// (a fresh unconstrained runner, prefilled from position 0).
tokens unconstrained_greedy(const tokens& known, int32_t n) {
  step_runner r(stories(), arena());
  r.open(open_of(1, known, "", 0.0f, 0));
  uint64_t step_id = 1;
  tokens t = known, out;
  int32_t n_computed = 0;
  for (int32_t i = 0; i < n; ++i) {
    const tokens got = run_step(r, step_id, 1, t, n_computed, {});
    if (got.size() != 1) break;
    n_computed = static_cast<int32_t>(t.size());
    t.push_back(got[0]);
    out.push_back(got[0]);
  }
  return out;
}

// The constrained greedy output without drafts (the reference for greedy).
tokens constrained_greedy(const tokens& prompt, const std::string& gbnf, const vocab_trie& trie) {
  step_runner r(stories(), arena());
  r.open(open_of(1, prompt, gbnf, 0.0f, 0));
  uint64_t step_id = 1;
  tokens t = prompt, out;
  int32_t n_computed = 0;
  while (static_cast<int32_t>(out.size()) < k_n_generate) {
    const tokens got = run_step(r, step_id, 1, t, n_computed, {});
    if (got.size() != 1) break;
    n_computed = static_cast<int32_t>(t.size());
    t.push_back(got[0]);
    out.push_back(got[0]);
    if (trie.is_eog(got[0])) break;
  }
  return out;
}

// A random walk of up to n tokens the brute force allows from s (no end tokens).
tokens valid_walk(grammar_matcher& m, const vocab_trie& trie, grammar_matcher::state s, int32_t n, std::mt19937& rng) {
  tokens walk;
  for (int32_t i = 0; i < n; ++i) {
    tokens ok;
    for (int32_t id = 0; id < trie.n_vocab(); ++id) {
      if (!trie.is_eog(id) && brute_force_allows(m, trie, s, id)) ok.push_back(id);
    }
    if (ok.empty()) break;
    walk.push_back(ok[rng() % ok.size()]);
    m.advance(s, trie.token_bytes(walk.back()));
  }
  return walk;
}

// A token the brute force forbids at s (there is one in every state of these grammars).
int32_t forbidden_token(grammar_matcher& m, const vocab_trie& trie, const grammar_matcher::state& s, std::mt19937& rng) {
  for (;;) {
    const auto id = static_cast<int32_t>(rng() % static_cast<uint32_t>(trie.n_vocab()));
    if (!brute_force_allows(m, trie, s, id)) return id;
  }
}

std::string text_of(const tokens& t, const vocab_trie& trie) {
  std::string text;
  for (int32_t id : t) text += trie.token_bytes(id);
  return text;
}

struct tally {
  int n_steps = 0, n_accepted = 0, n_forbidden_drafts = 0, n_forbidden_rejected = 0;
};

// One generation of up to k_n_generate tokens with drafts every step.
void generate(const std::string& gbnf, float temperature, uint64_t seed, const tokens& prompt, const vocab_trie& trie,
              tally& t) {
  SCOPED_TRACE("grammar " + gbnf + (temperature > 0 ? " sampled" : " greedy") + " seed " + std::to_string(seed));
  auto g = grammar::compile(gbnf);
  ASSERT_TRUE(g) << g.error().message;
  grammar_matcher m(*g);
  const tokens reference = temperature > 0 ? tokens{} : constrained_greedy(prompt, gbnf, trie);
  step_runner r(stories(), arena());
  r.open(open_of(7, prompt, gbnf, temperature, seed));
  std::mt19937 rng(static_cast<uint32_t>(seed));
  uint64_t step_id = 1;
  tokens known = prompt, out;
  int32_t n_computed = 0;
  grammar_matcher::state s = m.initial();
  bool ended = false;
  while (!ended && static_cast<int32_t>(out.size()) < k_n_generate) {
    // The draft: one of four kinds, then cut to what is left of the output.
    tokens draft;
    const int kind = out.empty() ? -1 : static_cast<int>(rng() % (temperature > 0 ? 3 : 4));
    if (kind == 0) {
      draft = unconstrained_greedy(known, k_max_draft);
    } else if (kind == 1) {
      draft = valid_walk(m, trie, s, 1 + static_cast<int32_t>(rng() % k_max_draft), rng);
    } else if (kind == 2) {
      draft = valid_walk(m, trie, s, static_cast<int32_t>(rng() % 3), rng);
      grammar_matcher::state x = s;
      for (int32_t d : draft) m.advance(x, trie.token_bytes(d));
      draft.push_back(forbidden_token(m, trie, x, rng));
      const tokens tail = unconstrained_greedy(known, 2);
      draft.insert(draft.end(), tail.begin(), tail.end());
    } else if (kind == 3) {
      const auto at = reference.begin() + static_cast<long>(std::min(out.size(), reference.size()));
      draft.assign(at, reference.end());
    }
    const auto room = static_cast<size_t>(k_n_generate) - out.size() - 1;
    if (draft.size() > std::min<size_t>(room, k_max_draft)) draft.resize(std::min<size_t>(room, k_max_draft));
    // Which drafts the brute force forbids, on the path of the ones before.
    {
      grammar_matcher::state x = s;
      for (int32_t d : draft) {
        if (!brute_force_allows(m, trie, x, d)) {
          ++t.n_forbidden_drafts;
          break;
        }
        if (trie.is_eog(d)) break;
        m.advance(x, trie.token_bytes(d));
      }
    }
    const tokens got = run_step(r, step_id, 7, known, n_computed, draft);
    ASSERT_GE(got.size(), 1u);
    ASSERT_LE(got.size(), draft.size() + 1);
    ++t.n_steps;
    for (size_t j = 0; j < got.size(); ++j) {
      const int32_t id = got[j];
      ASSERT_TRUE(brute_force_allows(m, trie, s, id))
          << "step " << t.n_steps << ", position " << j << ": token " << id << " '" << trie.token_bytes(id)
          << "' is forbidden after '" << text_of(out, trie) << "'";
      if (j + 1 < got.size()) {
        ASSERT_EQ(id, draft[j]) << "an answered token before the last must be an accepted draft";
        ++t.n_accepted;
      } else if (j < draft.size() && !brute_force_allows(m, trie, s, draft[j])) {
        ++t.n_forbidden_rejected;
      }
      out.push_back(id);
      known.push_back(id);
      if (trie.is_eog(id)) {
        ASSERT_EQ(j + 1, got.size()) << "nothing follows an end token";
        ended = true;
        break;
      }
      ASSERT_TRUE(m.advance(s, trie.token_bytes(id)));
    }
    n_computed = static_cast<int32_t>(known.size()) - 1;
  }
  if (ended) {
    EXPECT_TRUE(grammar_matcher::is_complete(s)) << "ended before the document was complete";
  }
  if (temperature == 0) {
    EXPECT_EQ(out, reference) << "greedy with drafts must give the greedy text";
  }
}

TEST(step_runner_grammar_drafts, only_tokens_the_brute_force_allows_greedy_and_sampled) {
  const tokenizer* tok = testing_support::stories_tokenizer();
  ASSERT_TRUE(tok);
  const auto trie = vocab_trie::from_tokenizer(*tok);
  ASSERT_EQ(trie->n_vocab(), 512);
  const std::vector<tokens> prompts = {tok->encode("Once upon a time, there was a little girl. Once upon a time", true),
                                       tok->encode("Tom said, \"Look!\" Tom said, \"Look", true)};
  tally t;
  for (const std::string& gbnf : grammars()) {
    for (size_t p = 0; p < prompts.size(); ++p) {
      generate(gbnf, 0.0f, 100 + p, prompts[p], *trie, t);
      for (uint64_t seed : {1u, 2u, 3u}) generate(gbnf, 1.0f, seed * 10 + p, prompts[p], *trie, t);
    }
  }
  // The drafts did what they are for: some accepted, and forbidden ones met and rejected.
  EXPECT_GT(t.n_accepted, 40) << t.n_steps << " steps";
  EXPECT_GT(t.n_forbidden_drafts, 40);
  EXPECT_GT(t.n_forbidden_rejected, 40);
}

}  // namespace
}  // namespace cortex
