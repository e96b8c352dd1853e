#include "actors/http_gateway/openai_embedding.hpp"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "actors/http_gateway/openai_json.hpp"

namespace cortex::http {

std::string base64_f32le(const float* v, size_t n) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> bytes(n * 4);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v[i], 4);
    for (int k = 0; k < 4; ++k) bytes[4 * i + k] = static_cast<uint8_t>(bits >> (8 * k));
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t left = bytes.size() - i;
    const uint32_t triple = uint32_t(bytes[i]) << 16 | (left > 1 ? uint32_t(bytes[i + 1]) << 8 : 0) |
                            (left > 2 ? uint32_t(bytes[i + 2]) : 0);
    out += alphabet[triple >> 18 & 63];
    out += alphabet[triple >> 12 & 63];
    out += left > 1 ? alphabet[triple >> 6 & 63] : '=';
    out += left > 2 ? alphabet[triple & 63] : '=';
  }
  return out;
}

std::string openai_embedding_body(const std::string& model, const std::vector<std::vector<float>>& embeddings,
                                  uint64_t prompt_tokens, bool base64) {
  using nlohmann::ordered_json;
  ordered_json data = ordered_json::array();
  for (size_t i = 0; i < embeddings.size(); ++i) {
    const std::vector<float>& e = embeddings[i];
    ordered_json values;
    if (base64) {
      values = base64_f32le(e.data(), e.size());
    } else {
      values = ordered_json::array();
      for (float x : e) values.push_back(json_float(x));
    }
    data.push_back(ordered_json{{"object", "embedding"}, {"index", i}, {"embedding", std::move(values)}});
  }
  return dump_json(ordered_json{{"object", "list"},
                                {"data", std::move(data)},
                                {"model", model},
                                {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}});
}

std::string openai_rerank_body(const std::string& model, const std::vector<std::vector<float>>& scores,
                               uint64_t prompt_tokens, uint32_t top_n) {
  using nlohmann::ordered_json;
  std::vector<size_t> order(scores.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto score = [&](size_t i) { return scores[i].empty() ? 0.0f : scores[i][0]; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score(a) > score(b); });
  if (order.size() > top_n) order.resize(top_n);
  ordered_json results = ordered_json::array();
  for (size_t i : order) results.push_back(ordered_json{{"index", i}, {"relevance_score", json_float(score(i))}});
  return dump_json(ordered_json{{"model", model},
                                {"object", "list"},
                                {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}},
                                {"results", std::move(results)}});
}

}  // namespace cortex::http
