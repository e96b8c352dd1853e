#include "model/quantize_file.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "kernels/quant.hpp"
#include "kernels/thread_pool.hpp"
#include "gguf/gguf_writer.hpp"

namespace cortex::quantize {

namespace {

constexpr uint32_t k_quantization_version = 2;  // ggml.h GGML_QNT_VERSION

bool is_float_type(ggml_type t) { return t == ggml_type::f32 || t == ggml_type::f16 || t == ggml_type::bf16; }

std::string gib(uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(n) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

// The output's header: the input's metadata in its order, less the split
// keys and the two llama-quantize sets last (gguf_set_val_* removes a key
// and appends it). An input general.alignment other than 32 is dropped:
// llama-quantize copies the key yet pads to 32, which makes a file that
// contradicts itself; ours are padded to 32 and say nothing.
// With an importance matrix, llama-quantize's overrides follow (set the same
// way): the file as given and the first dataset (each cut to 127 bytes, its
// buffer's size), the number of entries, the chunk count when known.
void copy_metadata(const gguf::file& in, file_type ftype, const imatrix* im, const std::string& im_path, gguf::writer& w) {
  std::vector<std::pair<std::string, std::string>> im_strings;
  std::vector<std::pair<std::string, uint32_t>> im_counts;
  if (im) {
    im_strings.emplace_back("quantize.imatrix.file", im_path.substr(0, 127));
    if (!im->datasets.empty()) im_strings.emplace_back("quantize.imatrix.dataset", im->datasets[0].substr(0, 127));
    im_counts.emplace_back("quantize.imatrix.entries_count", static_cast<uint32_t>(im->weights.size()));
    if (im->chunk_count > 0) im_counts.emplace_back("quantize.imatrix.chunks_count", im->chunk_count);
  }
  auto set_later = [&](const std::string& key) {
    for (const auto& kv : im_strings) if (kv.first == key) return true;
    for (const auto& kv : im_counts) if (kv.first == key) return true;
    return false;
  };
  for (const auto& [key, v] : in.metadata()) {
    if (key == "general.quantization_version" || key == "general.file_type" || key == "split.no" ||
        key == "split.count" || key == "split.tensors.count" || set_later(key)) {
      continue;
    }
    if (key == "general.alignment" && !(v.type == gguf::value_type::u32 && v.u == 32)) continue;
    w.set_value(key, v);
  }
  w.set_u32("general.quantization_version", k_quantization_version);
  w.set_u32("general.file_type", static_cast<uint32_t>(ftype));
  // llama-quantize's order: file, dataset, entries, chunks.
  for (const auto& [key, v] : im_strings) w.set_string(key, v);
  for (const auto& [key, v] : im_counts) w.set_u32(key, v);
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Quantizes (or converts) one tensor's rows into out, rows in parallel;
// weights: its importance weights (n_cols per expert, the experts being
// ne[2]) or nullptr.
void convert_tensor(const gguf::tensor_info& src, const tensor_plan& tp, const float* weights, kernels::thread_pool& pool,
                    std::vector<std::vector<float>>& scratch, std::vector<uint8_t>& out) {
  const int64_t n_cols = src.ne[0], n_rows = src.n_rows();
  const size_t in_stride = src.n_bytes / static_cast<size_t>(n_rows);
  const size_t out_stride = row_size(tp.to, n_cols);
  const int64_t rows_per_task = std::max<int64_t>(1, std::min<int64_t>(64, n_rows / (4 * pool.size()) + 1));
  const int n_tasks = static_cast<int>((n_rows + rows_per_task - 1) / rows_per_task);
  pool.parallel_for(n_tasks, [&](int task, int thread) {
    std::vector<float>& row = scratch[static_cast<size_t>(thread)];
    row.resize(static_cast<size_t>(n_cols));
    const int64_t end = std::min(n_rows, (task + 1) * rows_per_task);
    for (int64_t r = task * rows_per_task; r < end; ++r) {
      const uint8_t* in = src.data + static_cast<size_t>(r) * in_stride;
      if (src.type == ggml_type::f32) {
        std::memcpy(row.data(), in, static_cast<size_t>(n_cols) * sizeof(float));
      } else {
        dequantize_row(src.type, in, row.data(), n_cols);
      }
      const float* qw = weights ? weights + (r / src.ne[1]) * n_cols : nullptr;
      quantize_row_weighted(tp.to, row.data(), out.data() + static_cast<size_t>(r) * out_stride, n_cols, qw);
    }
  });
}

}  // namespace

expected<plan> plan_file(const gguf::file& in, file_type ftype, const options& opt) {
  auto facts = read_model_facts(in);
  if (!facts) return facts.error();
  std::vector<tensor_desc> descs;
  descs.reserve(in.tensors().size());
  for (const auto& t : in.tensors()) {
    tensor_desc d;
    d.name = t.name;
    d.type = t.type;
    std::copy(t.ne, t.ne + 4, d.ne);
    descs.push_back(std::move(d));
  }
  return make_plan(descs, *facts, ftype, opt);
}

status check_plan(const plan& p) {
  const file_type ftype = p.ftype;
  std::map<uint32_t, const tensor_plan*> missing;  // type id -> first tensor needing it
  for (const auto& tp : p.tensors) {
    if (tp.from == tp.to) continue;
    if (tp.requires_imatrix && !p.has_imatrix) {
      return fail(errc::invalid_param, std::string(file_type_name(ftype)) + " needs an importance matrix for " + tp.name +
                                           " (" + type_name(tp.to) + "): give one with --imatrix (llama-imatrix makes it)");
    }
    if (!is_float_type(tp.from)) {
      return fail(errc::unsupported, "tensor " + tp.name + " is " + type_name(tp.from) + ": requantizing a quantized tensor to " +
                                         type_name(tp.to) + " is not supported (llama-quantize also refuses it without --allow-requantize)");
    }
    // A type whose quantizer exists only with importance weights (iq2_xxs,
    // iq2_xs) counts as writable in a plan with a matrix; match_imatrix
    // then requires an entry for each such tensor.
    const bool writable = quantize_supported(tp.to) || (p.has_imatrix && quantize_uses_weights(tp.to));
    if (!writable) missing.emplace(static_cast<uint32_t>(tp.to), &tp);
  }
  if (!missing.empty()) {
    std::string msg = std::string(file_type_name(ftype)) + " needs ";
    bool first = true;
    for (const auto& [id, tp] : missing) {
      msg += (first ? "" : "; ") + type_name(tp->to) + " (e.g. " + tp->name;
      if (tp->fell_back) msg += ", whose row length " + std::to_string(tp->ne[0]) + " takes llama-quantize's fallback type";
      msg += ")";
      first = false;
    }
    return fail(errc::unsupported, msg + ", and cortex has no quantizer for " + (missing.size() == 1 ? "it" : "them") + " yet");
  }
  return status::ok();
}

expected<std::vector<const float*>> match_imatrix(const plan& p, const imatrix& im, const std::string& im_path) {
  std::vector<const float*> out(p.tensors.size(), nullptr);
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const tensor_plan& tp = p.tensors[i];
    if (tp.from == tp.to) continue;
    const bool needs_weights = tp.requires_imatrix || !quantize_supported(tp.to);
    const auto it = im.weights.find(tp.name);
    if (it == im.weights.end()) {
      if (needs_weights) {
        return fail(errc::invalid_param, "importance matrix " + im_path + " has no data for " + tp.name + ", which " + type_name(tp.to) +
                                             " needs (llama-quantize refuses it too: the result would be garbage); "
                                             "was it computed for this model?");
      }
      continue;
    }
    const int64_t expected_size = tp.ne[0] * tp.ne[2];
    if (static_cast<int64_t>(it->second.size()) != expected_size) {
      // llama-quantize ignores a mismatched token_embd entry (the usual
      // case) and refuses any other.
      if ((tp.name == "token_embd.weight" || tp.name == "per_layer_token_embd.weight") && !needs_weights) continue;
      return fail(errc::invalid_param, "importance matrix " + im_path + " has " + std::to_string(it->second.size()) + " weights for " +
                                           tp.name + ", which needs " + std::to_string(expected_size) + " (" + std::to_string(tp.ne[0]) +
                                           " columns x " + std::to_string(tp.ne[2]) + " experts): it was computed for another model");
    }
    out[i] = it->second.data();
  }
  return out;
}

status check_room(const std::string& out_path, uint64_t bytes) {
  const std::string dir = parent_dir(out_path);
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) {
    return fail(errc::invalid_param, "cannot write to '" + dir + "': " + std::strerror(errno));
  }
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (free_bytes < bytes) {
    return fail(errc::invalid_param, "'" + out_path + "' would take " + gib(bytes) + " and " + dir + " has " + gib(free_bytes) +
                                         " free: nothing was written");
  }
  return status::ok();
}

status quantize_file(const std::string& in_path, const std::string& out_path, file_type ftype, const run_options& opt,
                     const std::function<void(const progress&)>& report) {
  auto in = gguf::file::open(in_path);
  if (!in) return in.error();
  const gguf::file& src = **in;

  struct stat st_in {}, st_out {};
  if (::stat(in_path.c_str(), &st_in) == 0 && ::stat(out_path.c_str(), &st_out) == 0 && st_in.st_dev == st_out.st_dev &&
      st_in.st_ino == st_out.st_ino) {
    return fail(errc::invalid_param, "input and output are the same file: '" + out_path + "'");
  }

  std::optional<imatrix> im;
  if (!opt.imatrix_path.empty()) {
    auto read = read_imatrix(opt.imatrix_path);
    if (!read) return read.error();
    im = std::move(*read);
  }
  options rules = opt.rules;
  rules.has_imatrix = im.has_value();
  auto p = plan_file(src, ftype, rules);
  if (!p) return p.error();
  if (auto ok = check_plan(*p); !ok) return ok;
  std::vector<const float*> weights(p->tensors.size(), nullptr);
  if (im) {
    auto matched = match_imatrix(*p, *im, opt.imatrix_path);
    if (!matched) return matched.error();
    weights = std::move(*matched);
  }

  gguf::writer w;
  copy_metadata(src, ftype, im ? &*im : nullptr, opt.imatrix_path, w);
  for (const auto& tp : p->tensors) w.declare_tensor(tp.name, tp.to, std::vector<int64_t>(tp.ne, tp.ne + tp.n_dims));
  const uint64_t size_out = w.file_size();

  if (auto room = check_room(out_path, size_out); !room) return room;

  kernels::thread_pool pool(std::max(1, opt.n_threads));
  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.size()));
  uint64_t written = 0;
  return w.write(out_path, [&](size_t i, std::vector<uint8_t>& out) {
    const tensor_plan& tp = p->tensors[i];
    const gguf::tensor_info& t = src.tensors()[tp.source];
    if (tp.from == tp.to) {
      std::memcpy(out.data(), t.data, out.size());
    } else {
      convert_tensor(t, tp, weights[i], pool, scratch, out);
    }
    src.release_pages(t.data, t.n_bytes);
    written += out.size();
    if (report) report({i + 1, p->tensors.size(), &tp, t.n_bytes, out.size(), written, size_out});
    return status::ok();
  });
}

}  // namespace cortex::quantize
