// Fuzz target: the grammar compiler and matcher (grammar/): GBNF text
// or a JSON Schema (converted to GBNF) compiled, then bytes fed to the
// matcher and masks computed over a small vocabulary.
// Input: byte 0 even: GBNF, odd: JSON Schema; then the text up to the first
// 0xFF byte; the bytes after it are matched.
// Properties: nothing crashes or hangs (the compiler's size caps bound the
// work, an open-parse bound like the executor's the matcher's); a schema's grammar compiles unless it is left-recursive or past
// the size caps (the pattern's own repetitions included); a token
// the mask allows advances the matcher, one it forbids does not.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_matcher.hpp"
#include "grammar/json_schema.hpp"
#include "grammar/token_mask.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cortex;

namespace {

// Every byte, a few multi-byte pieces (whole and split characters), and an
// end-of-generation token (id 0, no bytes).
std::shared_ptr<const vocab_trie> small_vocab() {
  static const std::shared_ptr<const vocab_trie> t = [] {
    std::vector<std::string> bytes{""};
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
    for (const char* s : {"{\"", "\":", "true", "null", "\xc3\xa9", "\xe2\x82", "\xac", " \"", "12", "ab"}) bytes.emplace_back(s);
    return std::make_shared<const vocab_trie>(std::move(bytes), std::vector<int32_t>{0});
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool schema = (data[0] & 1) != 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t cut = rest.find('\xff');
  const std::string_view text = rest.substr(0, cut);
  const std::string_view input = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 1);

  std::string gbnf(text);
  if (schema) {
    auto g = json_schema_to_gbnf(text);
    if (!g) return 0;
    gbnf = std::move(*g);
  }
  auto g = grammar::compile(gbnf);
  if (!g) {
    const std::string& e = g.error().message;  // a schema's grammar fails only on these
    FUZZ_CHECK(!schema || e.find("left-recursive") != std::string::npos || e.find("too large") != std::string::npos ||
               e.find("repetition") != std::string::npos);
    return 0;
  }
  grammar_matcher m(*g);
  token_masker masker(small_vocab(), m);
  const vocab_trie& t = *small_vocab();
  grammar_matcher::state s = m.initial();
  std::vector<uint64_t> mask;
  for (size_t i = 0; i <= input.size() && i < 64; ++i) {
    // The executor refuses a request past max_open_stacks (4096) open
    // parses (a grammar whose parses multiply with the output); this target
    // stops sooner, at 64: the check below advances the whole state once
    // per sampled token, and under the sanitizers' instrumentation one
    // input took over 10 s at 4096 parses and 1.4 s at 256.
    if (s.stacks.size() > 64) break;
    masker.compute(s, mask);
    for (int32_t id = 1; id < t.n_vocab(); id += 7) {  // a sample of the vocabulary
      grammar_matcher::state x = s;
      const bool allowed = (mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
      FUZZ_CHECK(allowed == m.advance(x, t.token_bytes(id)));
    }
    if (i == input.size() || !m.advance(s, input.substr(i, 1))) break;
  }
  return 0;
}
