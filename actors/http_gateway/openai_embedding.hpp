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

}  // namespace cortex::http
