// Sequence embeddings as llama.cpp's `--pooling mean` computes them: the mean
// over every token of the input (BOS included when the tokenizer adds it) of
// the final hidden state after the output norm, then L2-normalized. The
// forward pass sums the rows step by step (batch_seq::hidden_sum), so a
// prompt computed in several chunks pools exactly like one batch.
#pragma once

#include <cstdint>
#include <vector>

#include "model/expected.hpp"
#include "model/single_sequence.hpp"

namespace cortex {

// The embedding from `sum` ((n_embd,), the sum of n_tokens normed hidden
// rows): the mean, L2-normalized (an all-zero mean stays zero).
// REQUIRES: n_tokens >= 1.
std::vector<float> pooled_embedding(const float* sum, int n_embd, int n_tokens);

// Embeds `tokens` on `seq` from an empty state (it resets `seq` first and
// leaves the tokens in it), prefilling in chunks of at most `chunk`. Fails
// with a message for an empty list, a list longer than seq.n_ctx(), or an id
// outside the vocabulary.
expected<std::vector<float>> embed_tokens(single_sequence& seq, const model& m, const std::vector<int32_t>& tokens,
                                          int chunk = 512);

}  // namespace cortex
