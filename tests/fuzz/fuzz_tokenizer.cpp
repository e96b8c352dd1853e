// Fuzz target: tokenizer encode / decode / incremental detokenization
// (text/tokenizer.hpp) for every vocabulary of
// ../shared/golden/tokenizer/vocab (SPM and byte-level BPE with each
// pre-tokenizer), loaded once.
// Input: byte 0 picks the vocabulary, byte 1 the mode (bit 0 add_special,
// bit 1 parse_special, bit 2 decode raw ids instead of encoding text), the
// rest is the text (or little-endian int32 ids, some out of range).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "messages/wire/utf8.hpp"
#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/fuzz_shared.hpp"

using namespace cortex;

namespace {

struct loaded_vocab {
  std::unique_ptr<gguf::file> file;  // the tokenizer reads its metadata once; kept for symmetry with model
  std::unique_ptr<tokenizer> tok;
};

const std::vector<loaded_vocab>& vocabularies() {
  static const std::vector<loaded_vocab> v = [] {
    std::vector<loaded_vocab> out;
    for (const char* name : {"llama-spm", "phi-3", "gpt-2", "llama3", "qwen3", "deepseek-llm", "falcon", "starcoder"}) {
      const std::string path = fuzz::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-" + name + ".gguf";
      auto f = gguf::file::open(path);
      if (!f) {
        std::fprintf(stderr, "fuzz_tokenizer: %s\n", f.error().message.c_str());
        std::abort();
      }
      auto t = tokenizer::from_gguf(**f);
      if (!t) {
        std::fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path.c_str(), t.error().message.c_str());
        std::abort();
      }
      out.push_back({std::move(*f), std::move(*t)});
    }
    return out;
  }();
  return v;
}

// tokenizer.hpp: the detokenizer's chunks are valid UTF-8, and together
// equal decode() of the same ids whenever that decode is valid UTF-8.
void check_incremental(const tokenizer& tok, const std::vector<int32_t>& ids, const std::string& decoded) {
  incremental_detokenizer d(tok);
  std::string all;
  for (int32_t id : ids) {
    const std::string chunk = d.push(id);
    FUZZ_CHECK(wire::is_valid_utf8(chunk));
    all += chunk;
  }
  const std::string rest = d.flush();
  FUZZ_CHECK(wire::is_valid_utf8(rest));
  all += rest;
  if (wire::is_valid_utf8(decoded)) FUZZ_CHECK(all == decoded);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)vocabularies();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto& vocabs = vocabularies();
  const tokenizer& tok = *vocabs[data[0] % vocabs.size()].tok;
  const bool add_special = data[1] & 1, parse_special = data[1] & 2, raw_ids = data[1] & 4;
  data += 2;
  size -= 2;
  std::vector<int32_t> ids;
  if (raw_ids) {
    const int64_t n = tok.n_vocab();
    for (size_t i = 0; i + 4 <= size; i += 4) {
      uint32_t u;
      std::memcpy(&u, data + i, 4);
      ids.push_back(static_cast<int32_t>(static_cast<int64_t>(u % static_cast<uint64_t>(n + 16)) - 8));  // -8..n+7
    }
  } else {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    ids = tok.encode(text, add_special, parse_special);
    for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < tok.n_vocab());
  }
  const std::string decoded = tok.decode(ids);
  for (int32_t id : ids) (void)tok.token_to_piece(id);
  check_incremental(tok, ids, decoded);
  return 0;
}
