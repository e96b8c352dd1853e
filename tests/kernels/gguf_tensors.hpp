// Test helper: the tensors of a GGUF file (version 2 or 3), read whole into
// memory, for kernel tests on real weights without linking the model layer.
// Only what those tests need: names, shapes, types and data; metadata is
// skipped except general.alignment.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/ggml_type.hpp"

namespace cortex::testing {

struct gguf_tensor {
  ggml_type type;
  std::vector<int64_t> ne;  // ne[0] = elements per row
  const uint8_t* data;
  int64_t n_rows() const {
    int64_t n = 1;
    for (size_t i = 1; i < ne.size(); ++i) n *= ne[i];
    return n;
  }
};

class gguf_tensors {
 public:
  // Throws std::runtime_error if the file is missing or malformed.
  explicit gguf_tensors(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (take<uint32_t>() != 0x46554747u) throw std::runtime_error("not GGUF: " + path);
    const uint32_t version = take<uint32_t>();
    if (version < 2 || version > 3) throw std::runtime_error("GGUF version " + std::to_string(version));
    const uint64_t n_tensors = take<uint64_t>(), n_kv = take<uint64_t>();
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv; ++i) {
      const std::string key = take_string();
      const uint32_t type = take<uint32_t>();
      if (key == "general.alignment" && type == 4) {
        alignment = take<uint32_t>();
      } else {
        skip_value(type);
      }
    }
    struct info {
      std::string name;
      gguf_tensor t;
      uint64_t offset;
    };
    std::vector<info> infos;
    for (uint64_t i = 0; i < n_tensors; ++i) {
      info f{take_string(), {}, 0};
      const uint32_t n_dims = take<uint32_t>();
      for (uint32_t d = 0; d < n_dims; ++d) f.t.ne.push_back(static_cast<int64_t>(take<uint64_t>()));
      f.t.type = static_cast<ggml_type>(take<uint32_t>());
      f.offset = take<uint64_t>();
      infos.push_back(std::move(f));
    }
    const size_t data_start = (pos_ + alignment - 1) / alignment * alignment;
    for (info& f : infos) {
      if (f.t.ne.empty() || data_start + f.offset > bytes_.size()) throw std::runtime_error("bad tensor: " + f.name);
      if (type_traits(f.t.type).block_size > 0) {  // a type we know the size of
        const size_t n = row_size(f.t.type, f.t.ne[0]) * static_cast<size_t>(f.t.n_rows());
        if (data_start + f.offset + n > bytes_.size()) throw std::runtime_error("tensor past the end: " + f.name);
      }
      f.t.data = reinterpret_cast<const uint8_t*>(bytes_.data()) + data_start + f.offset;
      tensors_.emplace(f.name, f.t);
    }
  }

  const std::map<std::string, gguf_tensor>& all() const { return tensors_; }
  const gguf_tensor& at(const std::string& name) const { return tensors_.at(name); }

 private:
  template <class T>
  T take() {
    if (pos_ + sizeof(T) > bytes_.size()) throw std::runtime_error("GGUF truncated");
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string take_string() {
    const uint64_t n = take<uint64_t>();
    if (pos_ + n > bytes_.size()) throw std::runtime_error("GGUF truncated");
    std::string s(bytes_.data() + pos_, n);
    pos_ += n;
    return s;
  }
  void skip_value(uint32_t type) {
    static const size_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) {
      take_string();
    } else if (type == 9) {
      const uint32_t item = take<uint32_t>();
      const uint64_t n = take<uint64_t>();
      for (uint64_t i = 0; i < n; ++i) skip_value(item);
    } else if (type < 13) {
      pos_ += sizes[type];
    } else {
      throw std::runtime_error("GGUF value type " + std::to_string(type));
    }
  }

  std::vector<char> bytes_;
  size_t pos_ = 0;
  std::map<std::string, gguf_tensor> tensors_;
};

}  // namespace cortex::testing
