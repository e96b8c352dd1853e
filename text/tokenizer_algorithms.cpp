#include "text/tokenizer_algorithms.hpp"

#include <algorithm>
#include <queue>
#include <string>

#include "text/pre_tokenizer.hpp"
#include "text/unicode.hpp"

namespace cortex {
namespace {

// A run of the text being merged; symbols form a linked list, a merged-away
// symbol has n == 0.
struct symbol {
  int prev;
  int next;
  size_t begin;
  size_t n;
};

std::vector<symbol> split_chars(std::string_view text) {
  std::vector<symbol> syms;
  size_t offs = 0;
  int index = 0;
  while (offs < text.size()) {
    const size_t len = std::min(unicode::utf8_len(static_cast<uint8_t>(text[offs])), text.size() - offs);
    syms.push_back({index - 1, offs + len == text.size() ? -1 : index + 1, offs, len});
    offs += len;
    ++index;
  }
  return syms;
}

void unlink_right(std::vector<symbol>& syms, int left) {
  symbol& l = syms[static_cast<size_t>(left)];
  symbol& r = syms[static_cast<size_t>(l.next)];
  l.n += r.n;
  r.n = 0;
  l.next = r.next;
  if (r.next >= 0) syms[static_cast<size_t>(r.next)].prev = left;
}

struct spm_bigram {
  int left, right;
  float score;
  size_t size;
};
struct spm_order {
  // Highest score first, then leftmost.
  bool operator()(const spm_bigram& a, const spm_bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

struct bpe_bigram {
  int left, right;
  int32_t rank;
  std::string text;
};
struct bpe_order {
  // Lowest rank first, then leftmost.
  bool operator()(const bpe_bigram& a, const bpe_bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

// CJK Unified Ideographs and their extensions and compatibility blocks, as
// BERT's _is_chinese_char lists them (llama.cpp starts one range at
// 0x2B920 where BERT says 0x2B820, following Hugging Face's Rust code; the
// reference's ranges are the contract).
bool is_cjk_ideograph(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// BERT's basic tokenizer: normalised words, each as UTF-8.
std::vector<std::string> wpm_words(const vocab& v, std::string_view text) {
  std::vector<std::string> words(1);
  for (uint32_t cpt : unicode::cpts_from_utf8(text)) {
    if (v.strip_accents) cpt = unicode::nfd_first(cpt);
    if (unicode::is_whitespace(cpt)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cpt == 0 || cpt == 0xFFFD || unicode::is_control(cpt)) continue;
    if (v.strip_accents && unicode::is_mark(cpt)) continue;
    const uint32_t out = v.lowercase ? unicode::to_lower(cpt) : cpt;
    // The class is the one of the character before lowercasing.
    if (unicode::is_punctuation(cpt) || (cpt < 0x7F && unicode::is_symbol(cpt)) || is_cjk_ideograph(cpt)) {
      if (!words.back().empty()) words.emplace_back();
      unicode::append_utf8(words.back(), out);
      words.emplace_back();
    } else {
      unicode::append_utf8(words.back(), out);
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void wpm_encode(const vocab& v, std::string_view text, std::vector<int32_t>& out) {
  constexpr std::string_view k_word_start = "\xe2\x96\x81";  // U+2581 '▁'
  std::string word;
  for (const std::string& w : wpm_words(v, text)) {
    word.assign(k_word_start).append(w);
    const std::string_view s = word;
    const size_t n = s.size();
    const size_t n_before = out.size();
    // Longest token at each byte position (a match may end inside a
    // character, as the reference's byte-wise search allows).
    for (size_t i = 0; i < n;) {
      size_t matched = 0;
      for (size_t j = std::min(n, i + static_cast<size_t>(v.max_token_len)); j > i; --j) {
        if (const int32_t id = v.find(s.substr(i, j - i)); id >= 0) {
          out.push_back(id);
          matched = j - i;
          break;
        }
      }
      if (matched == 0) {
        out.resize(n_before);
        break;
      }
      i += matched;
    }
    if (out.size() == n_before) out.push_back(v.unk_id);
  }
}

void spm_encode(const vocab& v, std::string_view text, std::vector<int32_t>& out) {
  std::vector<symbol> syms = split_chars(text);
  if (syms.empty()) return;
  std::priority_queue<spm_bigram, std::vector<spm_bigram>, spm_order> queue;
  const auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const symbol& l = syms[static_cast<size_t>(left)];
    const symbol& r = syms[static_cast<size_t>(right)];
    const int32_t id = v.find(text.substr(l.begin, l.n + r.n));
    if (id < 0) return;
    queue.push({left, right, v.scores[static_cast<size_t>(id)], l.n + r.n});
  };
  for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const spm_bigram b = queue.top();
    queue.pop();
    const symbol& l = syms[static_cast<size_t>(b.left)];
    const symbol& r = syms[static_cast<size_t>(b.right)];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
    unlink_right(syms, b.left);
    try_add(syms[static_cast<size_t>(b.left)].prev, b.left);
    try_add(b.left, syms[static_cast<size_t>(b.left)].next);
  }

  for (int i = 0; i != -1; i = syms[static_cast<size_t>(i)].next) {
    const symbol& s = syms[static_cast<size_t>(i)];
    const std::string_view piece = text.substr(s.begin, s.n);
    const int32_t id = v.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // Every merged symbol is a token, so only single characters get here.
    for (char c : piece) {
      const int32_t b = v.byte_token(static_cast<uint8_t>(c));
      if (b >= 0) out.push_back(b);
    }
  }
}

void bpe_encode(const vocab& v, std::string_view text, std::vector<int32_t>& out) {
  for (const std::string& word : pre_tokenize(v.pre.kind, text)) {
    std::string enc;
    if (v.pre.byte_encode) {
      enc.reserve(word.size() * 2);
      for (char c : word) unicode::append_utf8(enc, unicode::byte_to_bpe_cpt(static_cast<uint8_t>(c)));
    } else {
      enc = word;
    }

    if (v.pre.ignore_merges) {
      if (const int32_t id = v.find(enc); id >= 0) {
        out.push_back(id);
        continue;
      }
    } else if (v.pre.kind == pre_tokenizer_kind::line_runs && enc.find_first_not_of('\n') == std::string::npos) {
      // Gemma 4: a run of newlines that is a token stays whole, as llama.cpp
      // special-cases it (the merges alone would not always rebuild it).
      if (const int32_t id = v.find(enc); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    std::vector<symbol> syms = split_chars(enc);
    std::priority_queue<bpe_bigram, std::vector<bpe_bigram>, bpe_order> queue;
    const auto try_add = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      const symbol& l = syms[static_cast<size_t>(left)];
      const symbol& r = syms[static_cast<size_t>(right)];
      const std::string_view lt = std::string_view(enc).substr(l.begin, l.n);
      const std::string_view rt = std::string_view(enc).substr(r.begin, r.n);
      const int32_t rank = v.merge_rank(lt, rt);
      if (rank < 0) return;
      queue.push({left, right, rank, enc.substr(l.begin, l.n + r.n)});
    };
    for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
      const bpe_bigram b = queue.top();
      queue.pop();
      const symbol& l = syms[static_cast<size_t>(b.left)];
      const symbol& r = syms[static_cast<size_t>(b.right)];
      if (l.n == 0 || r.n == 0 || l.next != b.right) continue;  // stale
      if (std::string_view(enc).substr(l.begin, l.n + r.n) != b.text) continue;
      unlink_right(syms, b.left);
      try_add(syms[static_cast<size_t>(b.left)].prev, b.left);
      try_add(b.left, syms[static_cast<size_t>(b.left)].next);
    }

    for (const symbol& s : syms) {
      if (s.n == 0) continue;
      const std::string_view piece = std::string_view(enc).substr(s.begin, s.n);
      const int32_t id = v.find(piece);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      // A merge whose result is not in the vocabulary: one token per byte,
      // its single-byte text (byte-level) or <0xXX> token, else nothing.
      for (char c : piece) {
        const int32_t b = v.pre.byte_encode ? v.find(std::string(1, c)) : v.byte_token(static_cast<uint8_t>(c));
        if (b >= 0) out.push_back(b);
      }
    }
  }
}

}  // namespace cortex
