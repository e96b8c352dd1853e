#include "gguf/gguf_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "kernels/quant.hpp"

namespace cortex::gguf {

namespace {

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

void put_str(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

}  // namespace

void writer::put_kv(const std::string& key, value_type t, std::vector<uint8_t> payload) {
  std::vector<uint8_t> bytes;
  put<uint32_t>(bytes, static_cast<uint32_t>(t));
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  for (auto& e : kvs_) {
    if (e.key == key) { e.bytes = std::move(bytes); return; }
  }
  kvs_.push_back({key, std::move(bytes)});
}

void writer::set_string(const std::string& key, const std::string& v) {
  std::vector<uint8_t> p; put_str(p, v); put_kv(key, value_type::string, std::move(p));
}
void writer::set_u32(const std::string& key, uint32_t v) { std::vector<uint8_t> p; put(p, v); put_kv(key, value_type::u32, std::move(p)); }
void writer::set_i32(const std::string& key, int32_t v) { std::vector<uint8_t> p; put(p, v); put_kv(key, value_type::i32, std::move(p)); }
void writer::set_u64(const std::string& key, uint64_t v) { std::vector<uint8_t> p; put(p, v); put_kv(key, value_type::u64, std::move(p)); }
void writer::set_f32(const std::string& key, float v) { std::vector<uint8_t> p; put(p, v); put_kv(key, value_type::f32, std::move(p)); }
void writer::set_bool(const std::string& key, bool v) { std::vector<uint8_t> p; put<uint8_t>(p, v ? 1 : 0); put_kv(key, value_type::boolean, std::move(p)); }

void writer::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t> p;
  put<uint32_t>(p, static_cast<uint32_t>(value_type::string));
  put<uint64_t>(p, v.size());
  for (auto& s : v) put_str(p, s);
  put_kv(key, value_type::array, std::move(p));
}

void writer::set_f32_array(const std::string& key, const std::vector<float>& v) {
  std::vector<uint8_t> p;
  put<uint32_t>(p, static_cast<uint32_t>(value_type::f32));
  put<uint64_t>(p, v.size());
  for (float x : v) put(p, x);
  put_kv(key, value_type::array, std::move(p));
}

void writer::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  std::vector<uint8_t> p;
  put<uint32_t>(p, static_cast<uint32_t>(value_type::i32));
  put<uint64_t>(p, v.size());
  for (int32_t x : v) put(p, x);
  put_kv(key, value_type::array, std::move(p));
}

void writer::set_value(const std::string& key, const value& v) {
  std::vector<uint8_t> p;
  switch (v.type) {
    case value_type::u8: case value_type::boolean: put<uint8_t>(p, static_cast<uint8_t>(v.u)); break;
    case value_type::i8: put<int8_t>(p, static_cast<int8_t>(v.i)); break;
    case value_type::u16: put<uint16_t>(p, static_cast<uint16_t>(v.u)); break;
    case value_type::i16: put<int16_t>(p, static_cast<int16_t>(v.i)); break;
    case value_type::u32: put<uint32_t>(p, static_cast<uint32_t>(v.u)); break;
    case value_type::i32: put<int32_t>(p, static_cast<int32_t>(v.i)); break;
    case value_type::u64: put<uint64_t>(p, v.u); break;
    case value_type::i64: put<int64_t>(p, v.i); break;
    case value_type::f32: put<float>(p, static_cast<float>(v.f)); break;
    case value_type::f64: put<double>(p, v.f); break;
    case value_type::string: put_str(p, std::string(v.str)); break;
    case value_type::array: {
      put<uint32_t>(p, static_cast<uint32_t>(v.elem_type));
      put<uint64_t>(p, v.count);
      if (v.elem_type == value_type::string) {
        for (auto sv : v.strings) put_str(p, std::string(sv));
      } else if (v.elem_type == value_type::array) {
        return;  // arrays of arrays: no GGUF model uses them; not copied
      } else {
        const size_t width = v.elem_type == value_type::u64 || v.elem_type == value_type::i64 || v.elem_type == value_type::f64 ? 8
                             : v.elem_type == value_type::u32 || v.elem_type == value_type::i32 || v.elem_type == value_type::f32 ? 4
                             : v.elem_type == value_type::u16 || v.elem_type == value_type::i16 ? 2 : 1;
        p.insert(p.end(), v.raw, v.raw + width * v.count);
      }
      break;
    }
  }
  put_kv(key, v.type, std::move(p));
}

void writer::add_tensor(const std::string& name, ggml_type type, std::vector<int64_t> ne, std::vector<uint8_t> data) {
  const uint64_t n = data.size();
  tensors_.push_back({name, type, std::move(ne), std::move(data), n});
}

void writer::declare_tensor(const std::string& name, ggml_type type, std::vector<int64_t> ne) {
  uint64_t rows = 1;
  for (size_t d = 1; d < ne.size(); ++d) rows *= static_cast<uint64_t>(ne[d]);
  const uint64_t n = row_size(type, ne.empty() ? 1 : ne[0]) * rows;
  tensors_.push_back({name, type, std::move(ne), {}, n});
}

std::vector<uint8_t> writer::build_header() const {
  std::vector<uint8_t> out;
  put<uint32_t>(out, 0x46554747u);
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  const bool custom_alignment = alignment_ != 32;
  put<uint64_t>(out, kvs_.size() + (custom_alignment ? 1 : 0));
  for (auto& e : kvs_) {
    put_str(out, e.key);
    out.insert(out.end(), e.bytes.begin(), e.bytes.end());
  }
  if (custom_alignment) {
    put_str(out, "general.alignment");
    put<uint32_t>(out, static_cast<uint32_t>(value_type::u32));
    put<uint32_t>(out, static_cast<uint32_t>(alignment_));
  }
  uint64_t offset = 0;
  for (auto& t : tensors_) {
    put_str(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) put<uint64_t>(out, static_cast<uint64_t>(n));
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset += (t.n_bytes + alignment_ - 1) / alignment_ * alignment_;
  }
  out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  return out;
}

uint64_t writer::file_size() const {
  uint64_t n = build_header().size();
  for (auto& t : tensors_) n += (t.n_bytes + alignment_ - 1) / alignment_ * alignment_;
  return n;
}

std::vector<uint8_t> writer::build() const {
  std::vector<uint8_t> out = build_header();
  for (auto& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  }
  return out;
}

status writer::write(const std::string& path) const {
  return write(path, [this](size_t i, std::vector<uint8_t>& out) {
    const auto& t = tensors_[i];
    if (t.data.size() != t.n_bytes) return fail(errc::internal, "tensor '" + t.name + "' was declared, not added");
    out = t.data;
    return status::ok();
  });
}

status writer::write(const std::string& path, const tensor_filler& fill) const {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return fail(errc::invalid_param, "cannot create '" + tmp + "': " + std::strerror(errno));
  // Streams the tensors: one tensor's bytes in memory at a time (an added
  // tensor's are copied once more, which only small files do).
  auto header = build_header();
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  status filled = status::ok();
  static const uint8_t zeros[64] = {};
  std::vector<uint8_t> bytes;
  for (size_t i = 0; ok && i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    bytes.assign(t.n_bytes, 0);
    filled = fill(i, bytes);
    if (filled && bytes.size() != t.n_bytes) filled = fail(errc::internal, "tensor '" + t.name + "': the filler changed its size");
    if (!filled) break;
    ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    const size_t pad = (alignment_ - t.n_bytes % alignment_) % alignment_;
    for (size_t left = pad; ok && left > 0;) {
      const size_t n = left < sizeof zeros ? left : sizeof zeros;
      ok = std::fwrite(zeros, 1, n, f) == n;
      left -= n;
    }
  }
  const bool closed = std::fclose(f) == 0;
  if (!filled || !ok || !closed) {
    std::remove(tmp.c_str());
    if (!filled) return filled;
    return fail(errc::internal, "cannot write '" + path + "' (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return fail(errc::invalid_param, "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  }
  return status::ok();
}

}  // namespace cortex::gguf
