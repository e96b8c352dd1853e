#include "gguf/gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <type_traits>

namespace cortex::gguf {

namespace {

constexpr uint32_t k_magic = 0x46554747;  // "GGUF" little-endian
constexpr uint64_t k_max_array_depth = 4;

size_t scalar_size(value_type t) {
  switch (t) {
    case value_type::u8: case value_type::i8: case value_type::boolean: return 1;
    case value_type::u16: case value_type::i16: return 2;
    case value_type::u32: case value_type::i32: case value_type::f32: return 4;
    case value_type::u64: case value_type::i64: case value_type::f64: return 8;
    default: return 0;
  }
}

// Bounds-checked little-endian cursor over the file image. Every read
// reports failure instead of reading past the end.
class cursor {
 public:
  cursor(const uint8_t* p, size_t n) : base_(p), size_(n) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  template <class T>
  bool read(T& out) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(&out, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool read_string(std::string_view& out) {
    uint64_t len = 0;
    if (!read(len) || len > remaining()) return false;
    out = std::string_view(reinterpret_cast<const char*>(base_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return true;
  }
  bool skip(uint64_t n) {
    if (n > remaining()) return false;
    pos_ += static_cast<size_t>(n);
    return true;
  }
  const uint8_t* here() const { return base_ + pos_; }

 private:
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
};

std::string hex_offset(size_t off) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%zx", off);
  return buf;
}

bool read_scalar(cursor& c, value_type t, value& v) {
  switch (t) {
    case value_type::u8: { uint8_t x; if (!c.read(x)) return false; v.u = x; v.i = x; v.f = x; return true; }
    case value_type::i8: { int8_t x; if (!c.read(x)) return false; v.i = x; v.f = x; v.u = static_cast<uint64_t>(x); return true; }
    case value_type::u16: { uint16_t x; if (!c.read(x)) return false; v.u = x; v.i = x; v.f = x; return true; }
    case value_type::i16: { int16_t x; if (!c.read(x)) return false; v.i = x; v.f = x; v.u = static_cast<uint64_t>(x); return true; }
    case value_type::u32: { uint32_t x; if (!c.read(x)) return false; v.u = x; v.i = x; v.f = x; return true; }
    case value_type::i32: { int32_t x; if (!c.read(x)) return false; v.i = x; v.f = x; v.u = static_cast<uint64_t>(x); return true; }
    case value_type::u64: { uint64_t x; if (!c.read(x)) return false; v.u = x; v.i = static_cast<int64_t>(x); v.f = static_cast<double>(x); return true; }
    case value_type::i64: { int64_t x; if (!c.read(x)) return false; v.i = x; v.f = static_cast<double>(x); v.u = static_cast<uint64_t>(x); return true; }
    case value_type::f32: { float x; if (!c.read(x)) return false; v.f = x; return true; }
    case value_type::f64: { double x; if (!c.read(x)) return false; v.f = x; return true; }
    case value_type::boolean: { uint8_t x; if (!c.read(x)) return false; v.u = x != 0; v.i = v.u; return true; }
    default: return false;
  }
}

// Reads a value of type t at the cursor. Returns an empty string on success,
// else what went wrong.
std::string read_value(cursor& c, value_type t, value& v, uint64_t depth) {
  v.type = t;
  if (t == value_type::string) {
    return c.read_string(v.str) ? "" : "string length runs past the end of the file";
  }
  if (t == value_type::array) {
    if (depth >= k_max_array_depth) return "arrays nested too deeply";
    uint32_t et = 0;
    if (!c.read(et) || !c.read(v.count)) return "truncated array header";
    if (et > static_cast<uint32_t>(value_type::f64)) return "unknown array element type " + std::to_string(et);
    v.elem_type = static_cast<value_type>(et);
    if (v.elem_type == value_type::string) {
      // Each string needs at least its 8-byte length: reject absurd counts before reserving.
      if (v.count > c.remaining() / 8) return "array of " + std::to_string(v.count) + " strings runs past the end of the file";
      v.strings.reserve(static_cast<size_t>(v.count));
      for (uint64_t k = 0; k < v.count; ++k) {
        std::string_view s;
        if (!c.read_string(s)) return "string " + std::to_string(k) + " of array runs past the end of the file";
        v.strings.push_back(s);
      }
      return "";
    }
    if (v.elem_type == value_type::array) {
      if (v.count > c.remaining() / 12) return "nested array count runs past the end of the file";
      v.nested.resize(static_cast<size_t>(v.count));
      for (uint64_t k = 0; k < v.count; ++k) {
        auto err = read_value(c, value_type::array, v.nested[k], depth + 1);
        if (!err.empty()) return err;
      }
      return "";
    }
    const size_t es = scalar_size(v.elem_type);
    if (v.count > c.remaining() / es) return "array of " + std::to_string(v.count) + " elements runs past the end of the file";
    v.raw = c.here();
    c.skip(v.count * es);
    return "";
  }
  if (scalar_size(t) == 0) return "unknown value type " + std::to_string(static_cast<uint32_t>(t));
  return read_scalar(c, t, v) ? "" : "truncated value";
}

// Whether element `e` (read as type t) has a value an integral Out holds.
// Converting a float outside Out's range (or NaN) would be undefined
// behaviour, and an integer outside it would silently wrap.
template <class Out>
bool fits(const value& e, value_type t) {
  if constexpr (std::is_floating_point_v<Out>) {
    return true;
  } else {
    constexpr Out lo = std::numeric_limits<Out>::min(), hi = std::numeric_limits<Out>::max();
    if (t == value_type::f32 || t == value_type::f64) return e.f >= static_cast<double>(lo) && e.f <= static_cast<double>(hi);
    if (t == value_type::u64) return e.u <= static_cast<uint64_t>(hi);
    return e.i >= static_cast<int64_t>(lo) && e.i <= static_cast<int64_t>(hi);
  }
}

template <class Out>
bool convert_array(const value& v, std::vector<Out>& out) {
  if (v.type != value_type::array) return false;
  const size_t es = scalar_size(v.elem_type);
  if (es == 0) return false;
  out.resize(static_cast<size_t>(v.count));
  cursor c(v.raw, static_cast<size_t>(v.count) * es);
  for (auto& o : out) {
    value e;
    read_scalar(c, v.elem_type, e);
    if (!fits<Out>(e, v.elem_type)) return false;
    const bool is_float = v.elem_type == value_type::f32 || v.elem_type == value_type::f64;
    o = is_float ? static_cast<Out>(e.f) : static_cast<Out>(e.i);
  }
  return true;
}

}  // namespace

const char* value_type_name(value_type t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

expected<std::unique_ptr<file>> file::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errc::invalid_param, "cannot open model file '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return fail(errc::invalid_param, "cannot stat '" + path + "': " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(errc::invalid_param, "'" + path + "' is not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < 24) {
    ::close(fd);
    return fail(errc::malformed, "'" + path + "' is not a GGUF file: only " + std::to_string(size) + " bytes");
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (p == MAP_FAILED) return fail(errc::invalid_param, "cannot mmap '" + path + "': " + std::strerror(map_errno));
  std::unique_ptr<file> f(new file());
  f->path_ = path;
  f->base_ = static_cast<const uint8_t*>(p);
  f->size_ = size;
  f->mapped_ = true;
  auto st2 = f->parse_all();
  if (!st2) return fail(st2.code, "invalid GGUF file '" + path + "': " + st2.message);
  return f;
}

expected<std::unique_ptr<file>> file::parse(const uint8_t* data, size_t size, std::string name) {
  std::unique_ptr<file> f(new file());
  f->path_ = std::move(name);
  f->base_ = data;
  f->size_ = size;
  auto st = f->parse_all();
  if (!st) return fail(st.code, "invalid GGUF file '" + f->path_ + "': " + st.message);
  return f;
}

void file::release_pages(const void* p, size_t n) const {
  if (!mapped_ || n == 0) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  const auto lo = reinterpret_cast<uintptr_t>(base_), hi = lo + size_;
  if (begin < lo || end > hi || end <= begin) return;
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

file::~file() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

status file::parse_all() {
  cursor c(base_, size_);
  uint32_t magic = 0;
  if (!c.read(magic)) return fail(errc::malformed, "truncated header");
  if (magic != k_magic) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "bad magic 0x%08x (expected 'GGUF')", magic);
    return fail(errc::malformed, buf);
  }
  if (!c.read(version_)) return fail(errc::malformed, "truncated header");
  if (version_ != 2 && version_ != 3) {
    return fail(errc::unsupported, "unsupported GGUF version " + std::to_string(version_) + " (supported: 2, 3)");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  if (!c.read(n_tensors) || !c.read(n_kv)) return fail(errc::malformed, "truncated header");
  // Every KV needs >= 12 bytes, every tensor info >= 24: reject absurd counts up front.
  if (n_kv > c.remaining() / 12) return fail(errc::malformed, "metadata count " + std::to_string(n_kv) + " exceeds the file size");
  if (n_tensors > c.remaining() / 24) return fail(errc::malformed, "tensor count " + std::to_string(n_tensors) + " exceeds the file size");

  kv_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t k = 0; k < n_kv; ++k) {
    const size_t at = c.pos();
    std::string_view key;
    if (!c.read_string(key)) return fail(errc::malformed, "metadata key " + std::to_string(k) + " at offset " + hex_offset(at) + " runs past the end of the file");
    uint32_t t = 0;
    if (!c.read(t)) return fail(errc::malformed, "truncated metadata entry '" + std::string(key) + "'");
    if (t > static_cast<uint32_t>(value_type::f64)) {
      return fail(errc::malformed, "metadata key '" + std::string(key) + "' has unknown value type " + std::to_string(t));
    }
    value v;
    auto err = read_value(c, static_cast<value_type>(t), v, 0);
    if (!err.empty()) return fail(errc::malformed, "metadata key '" + std::string(key) + "': " + err);
    std::string skey(key);
    if (kv_index_.count(skey)) return fail(errc::malformed, "duplicate metadata key '" + skey + "'");
    kv_index_.emplace(skey, kv_.size());
    kv_.emplace_back(std::move(skey), std::move(v));
  }

  if (auto* a = find("general.alignment")) {
    if (a->type != value_type::u32 && a->type != value_type::u64 && a->type != value_type::i32) return fail(errc::malformed, "general.alignment is not an integer");
    if (a->u == 0 || (a->u & (a->u - 1)) != 0 || a->u > 65536) return fail(errc::malformed, "general.alignment " + std::to_string(a->u) + " is not a power of two <= 65536");
    alignment_ = a->u;
  }

  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    tensor_info ti;
    std::string_view name;
    if (!c.read_string(name)) return fail(errc::malformed, "tensor " + std::to_string(k) + " name runs past the end of the file");
    ti.name = std::string(name);
    if (!c.read(ti.n_dims)) return fail(errc::malformed, "truncated tensor info for '" + ti.name + "'");
    if (ti.n_dims == 0 || ti.n_dims > 4) return fail(errc::malformed, "tensor '" + ti.name + "' has " + std::to_string(ti.n_dims) + " dimensions (1..4 supported)");
    int64_t n_elem = 1;
    for (uint32_t d = 0; d < ti.n_dims; ++d) {
      uint64_t ne = 0;
      if (!c.read(ne)) return fail(errc::malformed, "truncated shape of tensor '" + ti.name + "'");
      if (ne == 0 || ne > (uint64_t(1) << 40)) return fail(errc::malformed, "tensor '" + ti.name + "' has invalid dimension " + std::to_string(ne));
      ti.ne[d] = static_cast<int64_t>(ne);
      if (n_elem > std::numeric_limits<int64_t>::max() / ti.ne[d]) return fail(errc::malformed, "tensor '" + ti.name + "' element count overflows");
      n_elem *= ti.ne[d];
    }
    uint32_t type = 0;
    if (!c.read(type) || !c.read(ti.offset)) return fail(errc::malformed, "truncated tensor info for '" + ti.name + "'");
    auto tr = type_traits(type);
    if (!tr.name) return fail(errc::unsupported, "tensor '" + ti.name + "' has unknown tensor type " + std::to_string(type));
    ti.type = static_cast<ggml_type>(type);
    if (ti.ne[0] % tr.block_size != 0) {
      return fail(errc::malformed, "tensor '" + ti.name + "' row length " + std::to_string(ti.ne[0]) + " is not a multiple of the " +
                  tr.name + " block size " + std::to_string(tr.block_size));
    }
    ti.n_bytes = static_cast<uint64_t>(n_elem / tr.block_size) * tr.type_size;
    if (ti.offset % alignment_ != 0) return fail(errc::malformed, "tensor '" + ti.name + "' offset " + std::to_string(ti.offset) + " is not aligned to " + std::to_string(alignment_));
    if (tensor_index_.count(ti.name)) return fail(errc::malformed, "duplicate tensor name '" + ti.name + "'");
    tensor_index_.emplace(ti.name, tensors_.size());
    tensors_.push_back(std::move(ti));
  }

  const uint64_t data_start = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (!tensors_.empty() && data_start > size_) return fail(errc::malformed, "tensor data section starts past the end of the file (truncated?)");
  const uint64_t data_size = size_ - std::min<uint64_t>(data_start, size_);
  for (auto& ti : tensors_) {
    if (ti.offset > data_size || ti.n_bytes > data_size - ti.offset) {
      return fail(errc::malformed, "tensor '" + ti.name + "' data [" + std::to_string(ti.offset) + ", " + std::to_string(ti.offset + ti.n_bytes) +
                  ") runs past the end of the file (data section has " + std::to_string(data_size) + " bytes; truncated?)");
    }
    ti.data = base_ + data_start + ti.offset;
  }
  return status::ok();
}

const value* file::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

std::optional<uint64_t> file::get_uint(std::string_view key) const {
  auto* v = find(key);
  if (!v) return std::nullopt;
  switch (v->type) {
    case value_type::u8: case value_type::u16: case value_type::u32: case value_type::u64: return v->u;
    case value_type::i8: case value_type::i16: case value_type::i32: case value_type::i64:
      if (v->i < 0) return std::nullopt;
      return static_cast<uint64_t>(v->i);
    default: return std::nullopt;
  }
}

std::optional<int64_t> file::get_int(std::string_view key) const {
  auto* v = find(key);
  if (!v) return std::nullopt;
  switch (v->type) {
    case value_type::u8: case value_type::u16: case value_type::u32: case value_type::i8:
    case value_type::i16: case value_type::i32: case value_type::i64: return v->i;
    case value_type::u64:
      if (v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return v->i;
    default: return std::nullopt;
  }
}

std::optional<double> file::get_float(std::string_view key) const {
  auto* v = find(key);
  if (!v || v->type == value_type::string || v->type == value_type::array || v->type == value_type::boolean) return std::nullopt;
  return v->f;
}

std::optional<bool> file::get_bool(std::string_view key) const {
  auto* v = find(key);
  if (!v || v->type != value_type::boolean) return std::nullopt;
  return v->u != 0;
}

std::optional<std::string_view> file::get_string(std::string_view key) const {
  auto* v = find(key);
  if (!v || v->type != value_type::string) return std::nullopt;
  return v->str;
}

std::optional<std::vector<float>> file::get_f32_array(std::string_view key) const {
  auto* v = find(key);
  std::vector<float> out;
  if (!v || !convert_array(*v, out)) return std::nullopt;
  return out;
}

std::optional<std::vector<int32_t>> file::get_i32_array(std::string_view key) const {
  auto* v = find(key);
  std::vector<int32_t> out;
  if (!v || !convert_array(*v, out)) return std::nullopt;
  return out;
}

const std::vector<std::string_view>* file::get_string_array(std::string_view key) const {
  auto* v = find(key);
  if (!v || v->type != value_type::array || v->elem_type != value_type::string) return nullptr;
  return &v->strings;
}

const tensor_info* file::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace cortex::gguf
