// The stories260K model, loaded once per test executable and shared by the
// step_runner tests (read-only: step runners borrow it).
#pragma once

#include <memory>
#include <string>

#include "model/model.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace testing_support {

// nullptr (with a gtest failure) when the model file cannot be read.
inline std::shared_ptr<const model> stories_model() {
  static const std::shared_ptr<const model> m = [] {
    auto loaded = model::load(cortex::testing::stories260k_path());
    EXPECT_TRUE(loaded) << loaded.error().message;
    return loaded ? std::shared_ptr<const model>(std::move(*loaded)) : nullptr;
  }();
  return m;
}

}  // namespace testing_support
}  // namespace cortex
