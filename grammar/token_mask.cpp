#include "grammar/token_mask.hpp"

#include <numeric>

#include "text/tokenizer.hpp"

namespace cortex {

vocab_trie::vocab_trie(std::vector<std::string> token_bytes, std::vector<int32_t> eog_ids)
    : bytes_(std::move(token_bytes)), eog_(std::move(eog_ids)) {
  std::sort(eog_.begin(), eog_.end());
  eog_.erase(std::unique(eog_.begin(), eog_.end()), eog_.end());
  // Sorted byte strings list the trie in preorder: each string adds the
  // nodes past its common prefix with the previous one.
  std::vector<int32_t> order;
  for (int32_t id = 0; id < n_vocab(); ++id) {
    if (!bytes_[static_cast<size_t>(id)].empty() && !is_eog(id)) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const std::string& x = bytes_[static_cast<size_t>(a)];
    const std::string& y = bytes_[static_cast<size_t>(b)];
    return x != y ? x < y : a < b;
  });
  byte_.push_back(0);
  depth_.push_back(0);
  skip_.push_back(0);
  std::vector<uint32_t> path{0};  // node per depth of the current string
  std::vector<std::vector<int32_t>> node_toks(1);
  const std::string* prev = nullptr;
  for (const int32_t id : order) {
    const std::string& s = bytes_[static_cast<size_t>(id)];
    size_t common = 0;
    if (prev != nullptr) {
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    }
    common = std::min(common, path.size() - 1);
    while (path.size() > common + 1) {  // close the nodes past the common prefix
      skip_[path.back()] = static_cast<uint32_t>(byte_.size());
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<uint32_t>(byte_.size()));
      byte_.push_back(static_cast<uint8_t>(s[d]));
      depth_.push_back(static_cast<uint16_t>(std::min<size_t>(d + 1, 0xFFFF)));
      skip_.push_back(0);
      node_toks.emplace_back();
    }
    node_toks[path.back()].push_back(id);
    prev = &s;
  }
  while (!path.empty()) {
    skip_[path.back()] = static_cast<uint32_t>(byte_.size());
    path.pop_back();
  }
  tok_begin_.reserve(node_toks.size() + 1);
  for (const auto& t : node_toks) {
    tok_begin_.push_back(static_cast<uint32_t>(toks_.size()));
    toks_.insert(toks_.end(), t.begin(), t.end());
  }
  tok_begin_.push_back(static_cast<uint32_t>(toks_.size()));
}

std::shared_ptr<const vocab_trie> vocab_trie::from_tokenizer(const tokenizer& t) {
  std::vector<std::string> bytes(static_cast<size_t>(t.n_vocab()));
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < t.n_vocab(); ++id) {
    // Control tokens by their text, as llama.cpp's grammar sees them: a
    // forced harmony or DeepSeek call can use the model's own marker tokens.
    // End-of-generation tokens are not text: they end the output only where
    // the grammar is complete (the eog list).
    if (t.is_eog(id)) {
      eog.push_back(id);
    } else {
      bytes[static_cast<size_t>(id)] = t.special_piece(id);
    }
  }
  return std::make_shared<const vocab_trie>(std::move(bytes), std::move(eog));
}

token_masker::token_masker(std::shared_ptr<const vocab_trie> trie, grammar_matcher& m)
    : trie_(std::move(trie)), m_(m), words_((static_cast<size_t>(trie_->n_vocab()) + 63) / 64) {}

const std::vector<uint64_t>& token_masker::stack_mask(uint32_t node, const grammar_matcher::state& s) {
  const uint64_t k = grammar_matcher::key(node, s);
  auto it = cache_.find(k);
  if (it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  if ((cache_.size() + 1) * words_ * 8 > cache_bytes) cache_.clear();
  std::vector<uint64_t> mask(words_, 0);
  const vocab_trie& t = *trie_;
  if (m_.n_states() > max_states) m_.forget_states();
  grammar_matcher::state one = s;
  one.stacks.assign(1, node);
  if (levels_.empty()) levels_.resize(8);
  levels_[0] = m_.state_id(one);
  const auto n = static_cast<uint32_t>(t.byte_.size());
  for (uint32_t i = 1; i < n;) {
    const size_t d = t.depth_[i];
    if (d >= levels_.size()) levels_.resize(d + 1);
    levels_[d] = m_.step(levels_[d - 1], t.byte_[i]);
    if (levels_[d] == grammar_matcher::dead) {
      i = t.skip_[i];
      continue;
    }
    for (uint32_t j = t.tok_begin_[i]; j < t.tok_begin_[i + 1]; ++j) {
      const auto id = static_cast<uint32_t>(t.toks_[j]);
      mask[id >> 6] |= uint64_t{1} << (id & 63);
    }
    ++i;
  }
  return cache_.emplace(k, std::move(mask)).first->second;
}

size_t token_masker::compute(const grammar_matcher::state& s, std::vector<uint64_t>& mask) {
  mask.assign(words_, 0);
  for (const uint32_t node : s.stacks) {
    if (node == 0) continue;
    const std::vector<uint64_t>& m = stack_mask(node, s);
    for (size_t w = 0; w < words_; ++w) mask[w] |= m[w];
  }
  if (grammar_matcher::is_complete(s)) {
    for (const int32_t id : trie_->eog_) mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  }
  size_t n = 0;
  for (const uint64_t w : mask) n += static_cast<size_t>(__builtin_popcountll(w));
  return n;
}

}  // namespace cortex
