// Access to the independent reference data in ../shared (see
// shared/golden/README.md). Header-only; used by the model and e2e tests.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <algorithm>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cortex::testing {

// The shared reference folder: CORTEX_SHARED_DIR from the environment, else
// CMake's (../shared beside the repository).
inline std::string shared_dir() {
  const char* env = std::getenv("CORTEX_SHARED_DIR");
  return env != nullptr && *env != '\0' ? env : CORTEX_SHARED_DIR;
}

inline bool file_exists(const std::string& p) { return std::ifstream(p).good(); }

// Whether the reference data (llama.cpp's outputs, its tiny models and
// vocabularies: ../shared/golden) is there. A clone alone has none; the
// tests that compare against it are then skipped by
// CORTEX_NEEDS_REFERENCE_DATA(), named as skipped, and scripts/test says how
// many.
inline bool reference_data_present() {
  struct stat st{};
  return ::stat((shared_dir() + "/golden/README.md").c_str(), &st) == 0;
}

// A file of the shared folder by its path there ("models/stories260K.gguf",
// "golden/arch/llama-f32.gguf"): the repository's own copy where it ships
// one (its models/ holds the story model, the same file as the shared
// folder's), else the shared folder's.
inline std::string shared_file(const std::string& rel) {
  const std::string shipped = std::string(CORTEX_SOURCE_DIR) + "/" + rel;
  if (rel.rfind("models/", 0) == 0 && file_exists(shipped)) return shipped;
  return shared_dir() + "/" + rel;
}

// The story model that ships with the repository.
inline std::string stories260k_path() { return shared_file("models/stories260K.gguf"); }

// A model file by name: golden/models/ first, then models/ (the
// repository's where it ships the file).
inline std::string model_path(const std::string& name) {
  const std::string g = shared_dir() + "/golden/models/" + name;
  return file_exists(g) ? g : shared_file("models/" + name);
}

// A file of the reference data by its path under golden/ ("generation/
// stories260K.json"): the shared folder's where the reference data is there
// (a file missing from it then fails its test, as before), else the
// repository's copy (tests/data/reference/: the shipped model's files
// only), else "" (the test is skipped).
inline std::string reference_file(const std::string& rel) {
  if (reference_data_present()) return shared_dir() + "/golden/" + rel;
  const std::string copy = std::string(CORTEX_SOURCE_DIR) + "/tests/data/reference/" + rel;
  return file_exists(copy) ? copy : std::string();
}

// Why a test that needs the reference data is skipped (scripts/test counts
// the skips by this text).
inline std::string needs_reference_message() {
  return "needs the reference data of " + shared_dir() +
         "/golden (llama.cpp's outputs), which a clone alone lacks: set CORTEX_SHARED_DIR";
}

// The first line of a test (or its fixture's SetUp) that reads the shared
// folder's reference data: skips it, saying why, where there is none.
#define CORTEX_NEEDS_REFERENCE_DATA()                                                              \
  do {                                                                                             \
    if (!::cortex::testing::reference_data_present()) GTEST_SKIP() << ::cortex::testing::needs_reference_message(); \
  } while (false)

// The same for one reference file found by reference_file() ("" where absent).
#define CORTEX_NEEDS_REFERENCE_FILE(path)                                                   \
  do {                                                                                      \
    if ((path).empty()) GTEST_SKIP() << ::cortex::testing::needs_reference_message();      \
  } while (false)

inline nlohmann::json load_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

inline std::string hex_to_bytes(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

struct tolerance {
  double atol, rtol;
  bool greedy_must_match;
};

// README tolerances by the predominant weight type of the file name.
inline tolerance tolerance_for(const std::string& model_name) {
  if (model_name.find("f16") != std::string::npos) return {2e-2, 1e-3, true};
  if (model_name.find("q8_0") != std::string::npos || model_name.find("q4_") != std::string::npos) return {0.1, 1e-2, false};
  return {1e-3, 1e-4, true};  // f32 (stories260K.gguf is all F32)
}

// A file's bytes as they are ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A gtest parameter name from a model name ("tiny-llama-f32" -> "tiny_llama_f32").
template <class Info>
std::string model_param_name(const Info& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

}  // namespace cortex::testing
