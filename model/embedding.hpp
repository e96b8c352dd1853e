// Sequence embeddings as llama.cpp's `--pooling mean` computes them: the mean
// over every token of the input (BOS included when the tokenizer adds it) of
// the final hidden state after the output norm, then L2-normalized. The
// forward pass sums the rows step by step (batch_seq::hidden_sum), so a
// prompt computed in several chunks pools exactly like one batch.
#pragma once

#include <cstdint>
#include <vector>

#include "base/expected.hpp"
#include "model/forward.hpp"
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

// Encoders (hp.encoder.enabled: bert, nomic-bert, jina-bert-v2).
//
// llama-embedding's normalisation (--embd-normalize 2, its default and
// llama-server's): x / ||x||_2 with the sum of squares in double; a zero
// vector stays zero. n > 0.
void l2_normalize(float* x, int n);

// Checks that `inputs` can be encoded with `pooling` in one step each: every
// input has 1 to n_ctx_train tokens (an encoder sees its whole input at
// once; its positions end there), ids in the vocabulary, and rank pooling
// needs the model's classifier head. Errors say which input and what to fix.
status check_encoder_inputs(const model& m, const std::vector<std::vector<int32_t>>& inputs, pooling_kind pooling);

// Encodes `inputs` in steps of whole inputs (a step holds inputs up to
// max_step_tokens together, or one longer input alone) and returns one
// output per input as pooled_size() says: L2-normalised when `normalize`
// (each token's row for pooling none), rank scores never (as llama-server
// returns them). `kv` is only handed to the pass (encoders keep no K/V).
// Errors as check_encoder_inputs.
expected<std::vector<std::vector<float>>> encode_inputs(forward_pass& fwd, kv_arena& kv, const model& m,
                                                        const std::vector<std::vector<int32_t>>& inputs,
                                                        pooling_kind pooling, bool normalize,
                                                        int max_step_tokens = 512);

}  // namespace cortex
