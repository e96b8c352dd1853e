// The /v1/embeddings response (http.md "Embeddings"):
//   {"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
//    "model", "usage": {"prompt_tokens", "total_tokens"}}
// `embedding` is a list of numbers, or with encoding_format base64 the
// base64 of its little-endian float32 bytes. CAF-free; nothing throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cortex::http {

// Standard base64 (RFC 4648, with '=' padding) of the little-endian IEEE
// float32 bytes of v[0..n), whatever the host's byte order.
std::string base64_f32le(const float* v, size_t n);

// The body for `embeddings[i]` = the embedding of input i (index i), and the
// total prompt tokens of all inputs.
std::string openai_embedding_body(const std::string& model, const std::vector<std::vector<float>>& embeddings,
                                  uint64_t prompt_tokens, bool base64);

// The /v1/rerank response (http.md "Rerank"), as llama-server answers it:
//   {"model", "object": "list", "usage": {"prompt_tokens", "total_tokens"},
//    "results": [{"index", "relevance_score"}]}
// with scores[i][0] the score of document i, results sorted by score,
// highest first (equal scores: lower index first), the first top_n of them.
std::string openai_rerank_body(const std::string& model, const std::vector<std::vector<float>>& scores,
                               uint64_t prompt_tokens, uint32_t top_n);

}  // namespace cortex::http
