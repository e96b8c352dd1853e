#include "model/imatrix.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gguf/gguf.hpp"

namespace cortex::quantize {

namespace {

const std::string k_sums_suffix = ".in_sum2";
const std::string k_counts_suffix = ".counts";

status bad(const std::string& path, const std::string& what) {
  return fail(errc::malformed, "importance matrix " + path + ": " + what);
}

bool strip_suffix(std::string& name, const std::string& suffix) {
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  name.resize(name.size() - suffix.size());
  return true;
}

std::vector<float> f32_values(const gguf::tensor_info& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  std::memcpy(v.data(), t.data, v.size() * sizeof(float));
  return v;
}

// Checks one tensor's sums: finite and >= 0 (they are sums of squares).
status check_sums(const std::string& path, const std::string& name, const std::vector<float>& sums) {
  for (size_t i = 0; i < sums.size(); ++i) {
    if (!std::isfinite(sums[i]) || sums[i] < 0) {
      return bad(path, "tensor " + name + " has sum of squares " + std::to_string(sums[i]) + " at column " + std::to_string(i) +
                           ": must be finite and >= 0 (a corrupt file?)");
    }
  }
  return status::ok();
}

expected<imatrix> read_gguf(const std::string& path) {
  auto opened = gguf::file::open(path);
  if (!opened) return opened.error();
  const gguf::file& f = **opened;

  imatrix out;
  for (const char* key : {"imatrix.datasets", "imatrix.chunk_count", "imatrix.chunk_size"}) {
    if (!f.find(key)) {
      return bad(path, std::string("no ") + key + " metadata (llama-quantize refuses it too: \"missing imatrix metadata\"); "
                                                  "write it again with today's llama-imatrix");
    }
  }
  if (const auto* datasets = f.get_string_array("imatrix.datasets")) {
    for (auto d : *datasets) out.datasets.emplace_back(d);
  }
  const gguf::value* chunks = f.find("imatrix.chunk_count");
  if (chunks->type != gguf::value_type::u32) {
    return bad(path, std::string("imatrix.chunk_count is ") + gguf::value_type_name(chunks->type) + ", not u32");
  }
  out.chunk_count = static_cast<uint32_t>(chunks->u);

  // Pair each NAME.in_sum2 with its NAME.counts.
  std::map<std::string, std::pair<const gguf::tensor_info*, const gguf::tensor_info*>> pairs;
  for (const auto& t : f.tensors()) {
    std::string name = t.name;
    if (strip_suffix(name, k_sums_suffix)) pairs[name].first = &t;
    else if (strip_suffix(name, k_counts_suffix)) pairs[name].second = &t;
  }
  if (pairs.empty()) {
    return bad(path, "no <tensor>.in_sum2 / <tensor>.counts tensors: not an importance matrix (a model file?)");
  }
  for (const auto& [name, pair] : pairs) {
    const auto* sums_t = pair.first;
    const auto* counts_t = pair.second;
    if (!sums_t || !counts_t) {
      return bad(path, "tensor " + name + " has " + (sums_t ? k_sums_suffix + " but no " + k_counts_suffix
                                                             : k_counts_suffix + " but no " + k_sums_suffix));
    }
    if (sums_t->type != ggml_type::f32 || counts_t->type != ggml_type::f32) {
      return bad(path, "tensor " + name + ": " + k_sums_suffix + " and " + k_counts_suffix + " must be F32");
    }
    const int64_t n_values = sums_t->n_elements(), n_mat = counts_t->n_elements();
    if (n_mat < 1 || n_values < 1 || n_values % n_mat != 0) {
      return bad(path, "tensor " + name + " has " + std::to_string(n_values) + " sums for " + std::to_string(n_mat) +
                           " counts: the sums must be a whole number of columns per count");
    }
    const int64_t n_cols = n_values / n_mat;
    std::vector<float> sums = f32_values(*sums_t);
    if (auto ok = check_sums(path, name, sums); !ok) return ok;
    const std::vector<float> counts = f32_values(*counts_t);
    bool any_seen = false;
    for (int64_t j = 0; j < n_mat; ++j) {
      // llama-quantize rounds each count to an integer, then divides by it.
      if (!std::isfinite(counts[j]) || counts[j] < 0 || counts[j] > 9.0e15f) {
        return bad(path, "tensor " + name + " has count " + std::to_string(counts[j]) + " for matrix " + std::to_string(j) +
                             ": counts must be finite and >= 0");
      }
      const float count = static_cast<float>(std::llround(counts[j]));
      any_seen = any_seen || count > 0;
      for (int64_t i = 0; i < n_cols; ++i) {
        float& v = sums[static_cast<size_t>(j * n_cols + i)];
        v = count > 0 ? v / count : 1.0f;
      }
    }
    if (!any_seen) {
      return bad(path, "tensor " + name + " has zero counts: no activation reached it, so it holds no importance data; "
                       "compute the matrix on more text");
    }
    out.weights.emplace(name, std::move(sums));
  }
  return out;
}

// A little-endian reader over the legacy file's bytes.
struct byte_reader {
  const std::string& bytes;
  size_t at = 0;
  size_t left() const { return bytes.size() - at; }
  bool i32(int32_t& v) {
    if (left() < 4) return false;
    std::memcpy(&v, bytes.data() + at, 4);
    at += 4;
    return true;
  }
};

expected<imatrix> read_legacy(const std::string& path, const std::string& bytes) {
  imatrix out;
  out.legacy = true;
  byte_reader in{bytes};
  int32_t n_entries = 0;
  if (!in.i32(n_entries) || n_entries < 1) {
    return bad(path, "neither GGUF nor llama.cpp's legacy imatrix format (no entry count at its start)");
  }
  for (int32_t e = 0; e < n_entries; ++e) {
    const std::string where = "entry " + std::to_string(e + 1) + " of " + std::to_string(n_entries);
    int32_t len = 0;
    if (!in.i32(len) || len < 1 || static_cast<size_t>(len) > in.left()) {
      return bad(path, where + ": truncated or bad name length (not an importance matrix?)");
    }
    std::string name = bytes.substr(in.at, static_cast<size_t>(len));
    in.at += static_cast<size_t>(len);
    int32_t ncall = 0, n_values = 0;
    if (!in.i32(ncall) || !in.i32(n_values) || n_values < 1 || static_cast<size_t>(n_values) > in.left() / 4) {
      return bad(path, where + " (" + name + "): truncated or bad value count");
    }
    std::vector<float> sums(static_cast<size_t>(n_values));
    std::memcpy(sums.data(), bytes.data() + in.at, sums.size() * sizeof(float));
    in.at += sums.size() * sizeof(float);
    if (ncall < 1) {
      return bad(path, "tensor " + name + " has call count " + std::to_string(ncall) +
                           ": no activation reached it, so it holds no importance data");
    }
    if (auto ok = check_sums(path, name, sums); !ok) return ok;
    for (float& v : sums) v /= static_cast<float>(ncall);
    out.weights[name] = std::move(sums);
  }
  // Optional trailer: the chunk count and the dataset's name.
  int32_t chunks = 0, len = 0;
  if (in.i32(chunks)) {
    out.chunk_count = static_cast<uint32_t>(chunks);
    if (in.i32(len) && len > 0 && static_cast<size_t>(len) <= in.left()) out.datasets.push_back(bytes.substr(in.at, static_cast<size_t>(len)));
  }
  return out;
}

}  // namespace

expected<imatrix> read_imatrix(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail(errc::invalid_param, "cannot open importance matrix '" + path + "': " + std::strerror(errno));
  char magic[4] = {};
  f.read(magic, 4);
  if (f.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) return read_gguf(path);
  f.seekg(0);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return read_legacy(path, bytes);
}

}  // namespace cortex::quantize
