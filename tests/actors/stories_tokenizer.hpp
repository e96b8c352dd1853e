// The real tokenizer of stories260K (SentencePiece, 512 tokens, byte
// fallback: every non-ASCII character is split into byte tokens), loaded once
// per test executable.
#pragma once

#include <memory>
#include <string>

#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace testing_support {

// nullptr (with a gtest failure) when the model file cannot be read.
inline const tokenizer* stories_tokenizer() {
  struct loaded {
    std::unique_ptr<gguf::file> file;
    std::unique_ptr<tokenizer> tok;
    std::string error;
  };
  static const loaded l = [] {
    loaded r;
    auto f = gguf::file::open(cortex::testing::stories260k_path());
    if (!f) {
      r.error = f.error().message;
      return r;
    }
    r.file = std::move(*f);
    auto t = tokenizer::from_gguf(*r.file);
    if (!t) {
      r.error = t.error().message;
      return r;
    }
    r.tok = std::move(*t);
    return r;
  }();
  EXPECT_TRUE(l.tok) << "stories260K tokenizer: " << l.error;
  return l.tok.get();
}

}  // namespace testing_support
}  // namespace cortex
