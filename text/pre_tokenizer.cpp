#include "text/pre_tokenizer.hpp"

#include <cstdint>
#include <utility>

#include "text/unicode.hpp"

namespace cortex {
namespace {

using unicode::is_letter;
using unicode::is_number;
using unicode::is_whitespace;

constexpr uint32_t out_of_range = 0xFFFFFFFF;

// The piece of text a stage is looking at: code points [.., end).
struct piece_view {
  const uint32_t* cpts;
  size_t end;
  uint32_t at(size_t i) const { return i < end ? cpts[i] : out_of_range; }
};

bool ws(uint32_t c) { return c != out_of_range && is_whitespace(c); }
bool letter(uint32_t c) { return c != out_of_range && is_letter(c); }
bool number(uint32_t c) { return c != out_of_range && is_number(c); }
bool punct(uint32_t c) { return c != out_of_range && unicode::is_punctuation(c); }
// [^\s\p{L}\p{N}] restricted to the piece.
bool other(uint32_t c) { return c != out_of_range && !is_whitespace(c) && !is_letter(c) && !is_number(c); }
bool cr_or_lf(uint32_t c) { return c == '\r' || c == '\n'; }
uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// A stage: length of the match starting at `pos`, 0 when none starts there.
using matcher = size_t (*)(const piece_view& v, size_t pos);

template <class Pred>
size_t run_length(const piece_view& v, size_t pos, Pred pred) {
  size_t p = pos;
  while (pred(v.at(p))) ++p;
  return p - pos;
}

// 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive (ASCII only: no other
// code point lower-cases to these letters).
size_t match_contraction(const piece_view& v, size_t pos, bool icase) {
  if (v.at(pos) != '\'' || pos + 1 >= v.end) return 0;
  const auto fold = [&](uint32_t c) { return icase ? ascii_lower(c) : c; };
  const uint32_t c1 = fold(v.at(pos + 1));
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= v.end) return 0;
  const uint32_t c2 = fold(v.at(pos + 2));
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// Whitespace run at pos: its length and the end of its last \r or \n (0 if none).
std::pair<size_t, size_t> whitespace_run(const piece_view& v, size_t pos) {
  size_t n = 0, last_cr_lf_end = 0;
  while (ws(v.at(pos + n))) {
    if (cr_or_lf(v.at(pos + n))) last_cr_lf_end = pos + n + 1;
    ++n;
  }
  return {n, last_cr_lf_end};
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Always matches (a lone unmatched code point is its own word).
size_t match_gpt2(const piece_view& v, size_t pos) {
  if (size_t n = match_contraction(v, pos, false)) return n;
  const uint32_t c = v.at(pos);
  const size_t body = (c == ' ') ? pos + 1 : pos;
  const uint32_t b = v.at(body);
  if (letter(b)) return body - pos + run_length(v, body, letter);
  if (number(b)) return body - pos + run_length(v, body, number);
  if (other(b)) return body - pos + run_length(v, body, other);
  const size_t n_ws = whitespace_run(v, pos).first;
  if (n_ws > 1 && v.at(pos + n_ws) != out_of_range) return n_ws - 1;  // \s+(?!\S)
  if (n_ws > 0) return n_ws;
  return 1;
}

// ' ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+', the tail the Llama-3
// family regexes share; `symbol` is the bracket class. Always matches.
template <bool (*symbol)(uint32_t)>
size_t match_symbols_or_space(const piece_view& v, size_t pos) {
  const size_t body = (v.at(pos) == ' ') ? pos + 1 : pos;
  if (symbol(v.at(body))) {
    size_t p = body + run_length(v, body, symbol);
    while (cr_or_lf(v.at(p))) ++p;
    return p - pos;
  }
  const auto [n_ws, last_cr_lf_end] = whitespace_run(v, pos);
  if (last_cr_lf_end > 0) return last_cr_lf_end - pos;             // \s*[\r\n]+
  if (n_ws > 1 && v.at(pos + n_ws) != out_of_range) return n_ws - 1;  // \s+(?!\S)
  if (n_ws > 0) return n_ws;
  return 1;
}

// Llama-3 family: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|
// \p{N}{1,max_digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
template <size_t max_digits>
size_t match_llama3(const piece_view& v, size_t pos) {
  if (size_t n = match_contraction(v, pos, true)) return n;
  const uint32_t c = v.at(pos);
  if (!cr_or_lf(c) && !number(c) && (letter(c) || letter(v.at(pos + 1)))) {
    return 1 + run_length(v, pos + 1, letter);
  }
  if (number(c)) {
    size_t n = 1;
    while (n < max_digits && number(v.at(pos + n))) ++n;
    return n;
  }
  return match_symbols_or_space<other>(v, pos);
}

bool mark(uint32_t c) { return c != out_of_range && unicode::category_of(c) == unicode::cpt_category::mark; }
bool letter_or_mark(uint32_t c) { return letter(c) || mark(c); }
// [^\s\p{L}\p{M}\p{N}]
bool other_nor_mark(uint32_t c) { return other(c) && !mark(c); }

// Qwen 3.5: the Qwen2 regex with combining marks in the letter runs and out
// of the symbol runs: (?i:'s|...)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
//  ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t match_qwen35(const piece_view& v, size_t pos) {
  if (size_t n = match_contraction(v, pos, true)) return n;
  const uint32_t c = v.at(pos);
  if (!cr_or_lf(c) && !number(c) && (letter_or_mark(c) || letter_or_mark(v.at(pos + 1)))) {
    return 1 + run_length(v, pos + 1, letter_or_mark);
  }
  if (number(c)) return 1;
  return match_symbols_or_space<other_nor_mark>(v, pos);
}

// o200k ("gpt-4o"), as llama.cpp writes OpenAI's regex without the case
// classes it cannot express: with U = a letter not in a-z and L = a letter
// not in A-Z (a non-ASCII letter is both),
//   [^\r\n\p{L}\p{N}]?U*L+C? | [^\r\n\p{L}\p{N}]?U+L*C? | \p{N}{1,3} |
//    ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
// with C the case-insensitive contractions; the first alternative that
// matches wins, U* backtracking as a regex does.
bool upper_letter(uint32_t c) { return letter(c) && !(c >= 'a' && c <= 'z'); }
bool lower_letter(uint32_t c) { return letter(c) && !(c >= 'A' && c <= 'Z'); }
size_t match_gpt4o(const piece_view& v, size_t pos) {
  const uint32_t c = v.at(pos);
  const bool lead = c != out_of_range && !cr_or_lf(c) && !letter(c) && !number(c);
  const size_t s = lead ? pos + 1 : pos;
  const size_t u_end = s + run_length(v, s, upper_letter);
  size_t end = 0;  // 0: the letter alternatives do not match here
  if (lower_letter(v.at(u_end))) {
    end = u_end + run_length(v, u_end, lower_letter);  // U* then L+
  } else {
    for (size_t k = u_end; k > s && end == 0;) {  // U* gives back until L+ can start
      --k;
      if (lower_letter(v.at(k))) end = k + 1;
    }
    if (end == 0 && u_end > s) end = u_end;  // U+ L*
  }
  if (end > 0) return end - pos + match_contraction(v, end, true);
  if (number(c)) {
    size_t n = 1;
    while (n < 3 && number(v.at(pos + n))) ++n;
    return n;
  }
  const size_t body = c == ' ' ? pos + 1 : pos;
  if (other(v.at(body))) {
    size_t p = body + run_length(v, body, other);
    while (cr_or_lf(v.at(p)) || v.at(p) == '/') ++p;
    return p - pos;
  }
  return match_symbols_or_space<other>(v, pos);
}

// [^\n]+|[\n]+
size_t match_line_run(const piece_view& v, size_t pos) {
  const bool newline = v.at(pos) == '\n';
  return run_length(v, pos, [&](uint32_t c) { return c != out_of_range && (c == '\n') == newline; });
}

bool falcon_punct(uint32_t c) {
  if (c == out_of_range) return false;
  switch (c) {
    case '$': case '+': case '<': case '=': case '>': case '^': case '~': case '|':
      return true;
    default:
      return !is_whitespace(c) && unicode::is_punctuation(c);
  }
}
// [\p{P}\$\+<=>\^~\|]+
size_t match_punct_run(const piece_view& v, size_t pos) { return run_length(v, pos, falcon_punct); }

bool ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }
// [0-9][0-9][0-9]
size_t match_three_digits(const piece_view& v, size_t pos) {
  return ascii_digit(v.at(pos)) && ascii_digit(v.at(pos + 1)) && ascii_digit(v.at(pos + 2)) ? 3 : 0;
}
// \p{N}
size_t match_one_number(const piece_view& v, size_t pos) { return number(v.at(pos)) ? 1 : 0; }
// \p{N}+
size_t match_number_run(const piece_view& v, size_t pos) { return run_length(v, pos, number); }

// --- DeepSeek LLM: its regexes use explicit code-point ranges. The reference
// matches them on code points where non-ASCII white space reads as \v, so a
// white-space code point never matches a range.
struct cpt_range {
  uint32_t first, last;
};
template <size_t N>
bool in_ranges(const cpt_range (&ranges)[N], uint32_t c) {
  if (c == out_of_range || (c > 0x7F && is_whitespace(c))) return false;
  for (const auto& r : ranges) {
    if (c >= r.first && c <= r.last) return true;
  }
  return false;
}
// Cased letters as listed in DeepSeek's tokenizer.json.
constexpr cpt_range deepseek_letters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
    {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377},
    {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C},
    {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
    {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF},
    {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
    {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC},
    {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
    {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
    {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
    {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE},
    {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787},
    {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。]
constexpr cpt_range deepseek_punct[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
};
// [一-龥ࠀ-一가-퟿]
constexpr cpt_range deepseek_cjk[] = {{0x4E00, 0x9FA5}, {0x800, 0x4E00}, {0xAC00, 0xD7FF}};

bool ds_letter(uint32_t c) { return in_ranges(deepseek_letters, c); }
bool ds_punct(uint32_t c) { return in_ranges(deepseek_punct, c); }
bool ds_cjk(uint32_t c) { return in_ranges(deepseek_cjk, c); }

// [\r\n]
size_t match_cr_or_lf(const piece_view& v, size_t pos) { return cr_or_lf(v.at(pos)) ? 1 : 0; }
// \s?[class]+
template <bool (*in_class)(uint32_t)>
size_t match_space_then_run(const piece_view& v, size_t pos) {
  if (ws(v.at(pos)) && in_class(v.at(pos + 1))) return 1 + run_length(v, pos + 1, in_class);
  return run_length(v, pos, in_class);
}
// \s+$ (end of the piece)
size_t match_trailing_space(const piece_view& v, size_t pos) {
  const size_t n = run_length(v, pos, ws);
  return (n > 0 && pos + n == v.end) ? n : 0;
}
// [class]+
size_t match_cjk_run(const piece_view& v, size_t pos) { return run_length(v, pos, ds_cjk); }

struct segment {
  size_t begin, end;
};

// Splits every segment into matches of `m` and the runs between them.
std::vector<segment> apply_stage(const std::vector<uint32_t>& cpts, matcher m,
                                 const std::vector<segment>& in) {
  std::vector<segment> out;
  out.reserve(in.size() * 2);
  for (const segment& s : in) {
    const piece_view v{cpts.data(), s.end};
    size_t gap = s.begin, pos = s.begin;
    while (pos < s.end) {
      const size_t n = m(v, pos);
      if (n == 0) {
        ++pos;
        continue;
      }
      if (gap < pos) out.push_back({gap, pos});
      out.push_back({pos, pos + n});
      pos += n;
      gap = pos;
    }
    if (gap < s.end) out.push_back({gap, s.end});
  }
  return out;
}

std::vector<matcher> stages_of(pre_tokenizer_kind kind) {
  switch (kind) {
    case pre_tokenizer_kind::gpt2:
      return {match_gpt2};
    case pre_tokenizer_kind::llama3:
      return {match_llama3<3>};
    case pre_tokenizer_kind::qwen2:
      return {match_llama3<1>};
    case pre_tokenizer_kind::falcon:
      return {match_punct_run, match_gpt2, match_three_digits};
    case pre_tokenizer_kind::starcoder:
      return {match_one_number, match_gpt2};
    case pre_tokenizer_kind::deepseek_llm:
      return {match_cr_or_lf, match_space_then_run<ds_letter>, match_space_then_run<ds_punct>,
              match_trailing_space, match_cjk_run, match_number_run};
    case pre_tokenizer_kind::deepseek_coder:
      return {match_cr_or_lf, match_space_then_run<letter>, match_space_then_run<punct>, match_cjk_run,
              match_one_number};
    case pre_tokenizer_kind::qwen35:
      return {match_qwen35};
    case pre_tokenizer_kind::gpt4o:
      return {match_gpt4o};
    case pre_tokenizer_kind::line_runs:
      return {match_line_run};
    case pre_tokenizer_kind::default_bpe:
      break;
  }
  return {match_punct_run, match_gpt2, match_number_run, match_three_digits};
}

}  // namespace

std::optional<pre_tokenizer_info> pre_tokenizer_from_name(std::string_view name) {
  using k = pre_tokenizer_kind;
  // name, kind, clean_spaces, ignore_merges, add_bos, escape_whitespaces, byte_encode
  struct entry {
    std::string_view name;
    pre_tokenizer_info info;
  };
  static const entry table[] = {
      {"default", {k::default_bpe, true, false, false}},
      {"gpt-2", {k::gpt2, true, false, false}},
      {"phi-2", {k::gpt2, true, false, false}},
      {"mpt", {k::gpt2, true, false, false}},
      {"olmo", {k::gpt2, true, false, false}},
      {"modern-bert", {k::gpt2, true, false, false}},  // ModernBERT (llama.cpp: the GPT-2 split)
      {"llama3", {k::llama3, true, true, true}},
      {"llama-v3", {k::llama3, true, true, true}},
      {"llama-bpe", {k::llama3, true, true, true}},
      {"falcon3", {k::llama3, true, true, true}},
      {"qwen2", {k::qwen2, false, false, false}},
      {"deepseek-r1-qwen", {k::qwen2, false, false, false}},
      {"stablelm2", {k::qwen2, true, false, false}},
      {"falcon", {k::falcon, true, false, false}},
      {"starcoder", {k::starcoder, true, false, false}},
      {"refact", {k::starcoder, true, false, false}},
      {"codeshell", {k::starcoder, true, false, false}},
      {"smollm", {k::starcoder, false, false, false}},
      {"command-r", {k::starcoder, false, false, false}},
      {"deepseek-llm", {k::deepseek_llm, false, false, false}},
      {"deepseek-coder", {k::deepseek_coder, false, false, false}},
      {"qwen35", {k::qwen35, false, false, false}},
      {"gpt-4o", {k::gpt4o, false, false, false}},
      {"llama4", {k::gpt4o, false, false, false}},
      {"gemma4", {k::line_runs, true, false, false, true, false}},
  };
  for (const entry& e : table) {
    if (e.name == name) return e.info;
  }
  return std::nullopt;
}

std::vector<std::string> pre_tokenize(pre_tokenizer_kind kind, std::string_view text) {
  const std::vector<uint32_t> cpts = unicode::cpts_from_utf8(text);
  std::vector<segment> segments;
  if (!cpts.empty()) segments.push_back({0, cpts.size()});
  for (matcher m : stages_of(kind)) segments = apply_stage(cpts, m, segments);

  std::vector<std::string> words;
  words.reserve(segments.size());
  for (const segment& s : segments) {
    std::string w;
    for (size_t i = s.begin; i < s.end; ++i) unicode::append_utf8(w, cpts[i]);
    words.push_back(std::move(w));
  }
  return words;
}

}  // namespace cortex
