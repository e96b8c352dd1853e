// A contract check for fuzz targets: a violated property aborts with the
// property's text, so libFuzzer records the input as a crash. Used for
// promises the code under test states in its header (not for behaviour the
// fuzzer cannot know).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                        \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                             \
    }                                                                           \
  } while (0)
