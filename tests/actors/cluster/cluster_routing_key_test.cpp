// prefix_key_of (what the router hashes for affinity, issue 14): token ids
// when the request carries ids, else the bytes of its chat messages or its
// prompt; requests that share a long enough prefix share the key, requests
// that differ early do not, and a short prompt has none.
#include <gtest/gtest.h>

#include "actors/cluster/cluster_intake_actor.hpp"

namespace cortex {
namespace {

generation_request text(const std::string& prompt) {
  generation_request r;
  r.prompt = prompt;
  return r;
}

generation_request chat(const std::string& system, const std::string& user) {
  generation_request r;
  r.messages_json = R"([{"role":"system","content":")" + system + R"("},{"role":"user","content":")" + user + R"("}])";
  return r;
}

TEST(cluster_routing_key, a_shared_system_prompt_gives_one_key) {
  cluster_intake_config cfg;  // 4 blocks of 64 bytes: the first 256 bytes count
  const std::string sys(300, 'S');
  EXPECT_EQ(prefix_key_of(chat(sys, "tell me a story"), cfg), prefix_key_of(chat(sys, "what is 2+2?"), cfg));
  EXPECT_NE(prefix_key_of(chat(sys, "x"), cfg), prefix_key_of(chat("T" + sys, "x"), cfg));
  EXPECT_EQ(prefix_key_of(text(sys + " one"), cfg), prefix_key_of(text(sys + " two"), cfg));
  EXPECT_FALSE(prefix_key_of(text("Once upon a time"), cfg).has_value()) << "shorter than one block";
}

TEST(cluster_routing_key, token_ids_are_hashed_as_blocks_of_ids) {
  cluster_intake_config cfg;
  cfg.block_tokens = 16;
  generation_request a, b;
  a.use_tokens = b.use_tokens = true;
  for (int i = 0; i < 80; ++i) a.tokens.push_back(i + 1);
  b.tokens = a.tokens;
  b.tokens[70] = 7;  // past 4 blocks of 16
  EXPECT_EQ(prefix_key_of(a, cfg), prefix_key_of(b, cfg));
  b.tokens[3] = 7;
  EXPECT_NE(prefix_key_of(a, cfg), prefix_key_of(b, cfg));
  a.prompt = std::string(300, 'p');  // ignored: the ids are what the worker computes
  EXPECT_EQ(prefix_key_of(a, cfg), cluster::prefix_key_of_tokens(a.tokens, 16, 4));
  cfg.affinity_blocks = 1;  // only the first block counts now
  generation_request c = a;
  c.tokens[20] = 7;  // in the second block
  EXPECT_EQ(prefix_key_of(a, cfg), prefix_key_of(c, cfg));
  EXPECT_NE(prefix_key_of(a, cfg), prefix_key_of(b, cfg));
}

}  // namespace
}  // namespace cortex
