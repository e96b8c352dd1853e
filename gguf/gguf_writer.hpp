// Builds GGUF v3 files: metadata of every value type and tensors whose
// bytes are already in the target type. Used by `cortex make-model` and by
// tests that need small or deliberately broken files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/ggml_type.hpp"
#include "base/expected.hpp"
#include "gguf/gguf.hpp"

namespace cortex::gguf {

class writer {
 public:
  explicit writer(uint64_t alignment = 32) : alignment_(alignment) {}

  void set_string(const std::string& key, const std::string& v);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);

  // ne: GGUF dims, ne[0] = row length. REQUIRES: data.size() == the bytes of
  // that shape in `type`.
  void add_tensor(const std::string& name, ggml_type type, std::vector<int64_t> ne, std::vector<uint8_t> data);
  // Declares a tensor whose bytes the streaming write() asks for, so a model
  // larger than memory is written one tensor at a time. REQUIRES: ne[0] is a
  // whole number of `type`'s blocks.
  void declare_tensor(const std::string& name, ggml_type type, std::vector<int64_t> ne);
  // Copies one metadata value as it is (any type, arrays included), e.g.
  // a vocabulary's tokenizer.* keys from another GGUF file.
  void set_value(const std::string& key, const value& v);

  // Bytes write() will produce (header, tensors and their padding).
  uint64_t file_size() const;
  // The whole file image. REQUIRES: no tensor declared without data.
  std::vector<uint8_t> build() const;
  // Writes atomically (temp file + rename). Errors name the path.
  // REQUIRES: every tensor was added with its data (none declared).
  status write(const std::string& path) const;
  // Streaming write: tensors in order; a declared tensor's bytes come from
  // fill(index, out), with `out` already sized to that tensor's bytes (a
  // non-ok status from fill aborts the write and removes the temp file).
  using tensor_filler = std::function<status(size_t index, std::vector<uint8_t>& out)>;
  status write(const std::string& path, const tensor_filler& fill) const;

 private:
  struct kv { std::string key; std::vector<uint8_t> bytes; };  // bytes = type + value
  // data is empty for a declared tensor; n_bytes is its size either way.
  struct tensor { std::string name; ggml_type type; std::vector<int64_t> ne; std::vector<uint8_t> data; uint64_t n_bytes; };
  std::vector<uint8_t> build_header() const;  // through the padding before tensor data
  void put_kv(const std::string& key, value_type t, std::vector<uint8_t> payload);
  uint64_t alignment_;
  std::vector<kv> kvs_;
  std::vector<tensor> tensors_;
};

}  // namespace cortex::gguf
