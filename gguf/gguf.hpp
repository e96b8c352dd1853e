// GGUF reader: memory-maps a GGUF v2/v3 file read-only and indexes its
// metadata and tensor table. Tensor data is used in place (no copies).
//
// Every structural problem (bad magic, unsupported version, truncation,
// offsets past the end, unknown tensor type, size overflow) is reported by
// open() as an error naming the problem; a successfully opened file has
// every tensor's bytes inside the mapping.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/ggml_type.hpp"
#include "base/expected.hpp"

namespace cortex::gguf {

enum class value_type : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
const char* value_type_name(value_type t);

// One metadata value. Scalars are widened into u/i/f; strings point into the
// mapping. Arrays keep their element type, count and raw little-endian
// bytes (numeric) or a list of string views (strings).
struct value {
  value_type type = value_type::u8;
  uint64_t u = 0;           // unsigned scalars and bool
  int64_t i = 0;            // signed scalars (also set for unsigned that fit)
  double f = 0;             // float scalars (also set for integers)
  std::string_view str;     // string
  value_type elem_type = value_type::u8;  // array only
  uint64_t count = 0;                      // array only
  const uint8_t* raw = nullptr;            // numeric array data (unaligned)
  std::vector<std::string_view> strings;   // array of strings
  std::vector<value> nested;               // array of arrays (rare)
};

struct tensor_info {
  std::string name;
  ggml_type type = ggml_type::f32;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] = row length (innermost)
  uint64_t offset = 0;           // relative to the data section
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // inside the mapping
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
};

class file {
 public:
  // Opens and validates `path`. Errors name the file and the problem.
  static expected<std::unique_ptr<file>> open(const std::string& path);
  // Parses an in-memory image (used by tests and the writer's self-check).
  // The buffer must outlive the returned object.
  static expected<std::unique_ptr<file>> parse(const uint8_t* data, size_t size, std::string name);
  ~file();
  file(const file&) = delete;
  file& operator=(const file&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t size() const { return size_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, value>>& metadata() const { return kv_; }
  const value* find(std::string_view key) const;
  // Typed look-ups: nullopt when absent or of a non-convertible type.
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string_view> get_string(std::string_view key) const;
  // Numeric arrays converted element-wise; nullopt if absent, not numeric,
  // or (i32) an element outside int32's range (a float: also NaN).
  std::optional<std::vector<float>> get_f32_array(std::string_view key) const;
  std::optional<std::vector<int32_t>> get_i32_array(std::string_view key) const;
  const std::vector<std::string_view>* get_string_array(std::string_view key) const;

  const std::vector<tensor_info>& tensors() const { return tensors_; }
  // Hint that [p, p + n) (inside the mapping) will not be read again soon,
  // e.g. weights a forward pass has repacked into its own copy: the whole
  // pages inside it leave this process's resident set (MADV_DONTNEED on the
  // read-only private mapping; a later read faults them back in from the
  // file, same bytes). No-op for parsed in-memory images.
  void release_pages(const void* p, size_t n) const;
  const tensor_info* find_tensor(std::string_view name) const;

 private:
  file() = default;
  status parse_all();

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, value>> kv_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<tensor_info> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace cortex::gguf
