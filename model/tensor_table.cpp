#include "model/tensor_table.hpp"

#include "kernels/quant.hpp"
#include "kernels/quant_traits.hpp"

namespace cortex {

const char* role_name(tensor_role r) {
  switch (r) {
    case tensor_role::token_embd: return "token_embd";
    case tensor_role::output: return "output";
    case tensor_role::attn_q: return "attn_q";
    case tensor_role::attn_k: return "attn_k";
    case tensor_role::attn_v: return "attn_v";
    case tensor_role::attn_qkv: return "attn_qkv";
    case tensor_role::attn_output: return "attn_output";
    case tensor_role::ffn_gate: return "ffn_gate";
    case tensor_role::ffn_up: return "ffn_up";
    case tensor_role::ffn_gate_up: return "ffn_gate_up";
    case tensor_role::ffn_down: return "ffn_down";
    case tensor_role::norm: return "norm";
    case tensor_role::bias: return "bias";
    case tensor_role::rope_freqs: return "rope_freqs";
    case tensor_role::ffn_gate_inp: return "ffn_gate_inp";
    case tensor_role::ffn_gate_exps: return "ffn_gate_exps";
    case tensor_role::ffn_up_exps: return "ffn_up_exps";
    case tensor_role::ffn_down_exps: return "ffn_down_exps";
    case tensor_role::attn_sinks: return "attn_sinks";
    case tensor_role::per_layer_embd: return "per_layer_embd";
    case tensor_role::classifier: return "classifier";
  }
  return "?";
}

std::string layer_tensor(int layer, const char* what, const char* suffix) {
  return "blk." + std::to_string(layer) + "." + what + "." + suffix;
}

void tensor_table::matrix(std::string name, int64_t cols, int64_t rows, kernels::weight_view* dst, tensor_role role,
                          int layer, bool required) {
  tensor_decl d{std::move(name), {cols, rows}, role, layer, required, {{dst, rows}}, nullptr, nullptr};
  decls_.push_back(std::move(d));
}

void tensor_table::fused(std::string name, int64_t cols, std::vector<std::pair<kernels::weight_view*, int64_t>> parts,
                         tensor_role role, int layer) {
  int64_t rows = 0;
  for (const auto& p : parts) rows += p.second;
  tensor_decl d{std::move(name), {cols, rows}, role, layer, true, std::move(parts), nullptr, nullptr};
  decls_.push_back(std::move(d));
}

void tensor_table::vec(std::string name, int64_t n, std::vector<float>* dst, tensor_role role, int layer, bool required) {
  tensor_decl d{std::move(name), {n}, role, layer, required, {}, dst, nullptr};
  decls_.push_back(std::move(d));
}

void tensor_table::experts(std::string name, int64_t cols, int64_t rows, int64_t n_expert,
                           std::vector<kernels::weight_view>* dst, tensor_role role, int layer) {
  tensor_decl d{std::move(name), {cols, rows, n_expert}, role, layer, true, {}, nullptr, nullptr};
  d.experts = dst;
  decls_.push_back(std::move(d));
}

void tensor_table::gate_up_experts(int layer, int64_t cols, int64_t rows, int64_t n_expert,
                                   std::vector<kernels::weight_view>* gate, std::vector<kernels::weight_view>* up) {
  std::string fused_name = layer_tensor(layer, "ffn_gate_up_exps");
  tensor_decl fused{fused_name, {cols, 2 * rows, n_expert}, tensor_role::ffn_gate_exps, layer, false, {}, nullptr, nullptr};
  fused.experts = gate;
  fused.experts_second = up;
  decls_.push_back(std::move(fused));
  experts(layer_tensor(layer, "ffn_gate_exps"), cols, rows, n_expert, gate, tensor_role::ffn_gate_exps, layer);
  decls_.back().unless_present = fused_name;
  experts(layer_tensor(layer, "ffn_up_exps"), cols, rows, n_expert, up, tensor_role::ffn_up_exps, layer);
  decls_.back().unless_present = fused_name;
}

void tensor_table::vecs(std::string name, int64_t n, int64_t n_rows, std::vector<float>* dst, tensor_role role, int layer,
                        bool required) {
  tensor_decl d{std::move(name), {n, n_rows}, role, layer, required, {}, dst, nullptr};
  decls_.push_back(std::move(d));
}

void tensor_table::output(int64_t cols, int64_t rows, kernels::weight_view* dst, const kernels::weight_view* embd) {
  tensor_decl d{"output.weight", {cols, rows}, tensor_role::output, -1, false, {{dst, rows}}, nullptr, embd};
  decls_.push_back(std::move(d));
}

namespace {

std::string shape_str(const int64_t* ne, size_t n) {
  std::string s = "[";
  for (size_t d = 0; d < n; ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
  return s + "]";
}

// A matrix must have a matmul kernel for its type (every row of
// kernels/quant_traits.cpp that has one has a scalar one, so "on this CPU"
// is any x86-64); a vector or an embedding lookup needs a dequantizer.
status check_type(const std::string& name, uint32_t type_id, bool matmul) {
  const quant_traits* q = find_quant_traits(type_id);
  const std::string type = q ? q->name : "id " + std::to_string(type_id);
  if (q == nullptr || q->dequantize == nullptr) {
    return fail(errc::unsupported, "tensor '" + name + "' has type " + type + ", which cortexd cannot read");
  }
  if (matmul && q->matmul[0] == nullptr) {
    return fail(errc::unsupported, "tensor '" + name + "' has type " + type +
                                       ", which has no matrix kernel yet (re-quantize the file to a supported type, "
                                       "e.g. Q4_K_M, Q6_K or Q8_0)");
  }
  return status::ok();
}

}  // namespace

status tensor_table::bind(const gguf::file& f) const {
  for (const auto& d : decls_) {
    if (!d.unless_present.empty() && f.find_tensor(d.unless_present) != nullptr) continue;
    const gguf::tensor_info* t = f.find_tensor(d.name);
    if (t == nullptr) {
      if (d.fallback != nullptr) {
        *d.slices.front().first = *d.fallback;
        if (auto st = check_type("token_embd.weight (tied output)", static_cast<uint32_t>(d.fallback->type), true); !st) {
          return st;
        }
        continue;
      }
      if (d.required) return fail(errc::malformed, "missing tensor '" + d.name + "'");
      continue;
    }
    bool match = true;
    for (size_t i = 0; i < 4; ++i) {
      const int64_t want = i < d.ne.size() ? d.ne[i] : 1;
      if (t->ne[i] != want) match = false;
    }
    if (!match) {
      return fail(errc::malformed, "tensor '" + d.name + "' has shape " + shape_str(t->ne, t->n_dims) + ", expected " +
                                       shape_str(d.ne.data(), d.ne.size()));
    }
    // The token embedding is read a row at a time (dequantized), unless it
    // also serves as the tied output matrix (checked there).
    const bool matmul = d.is_matrix() && d.role != tensor_role::token_embd;
    if (auto st = check_type(d.name, static_cast<uint32_t>(t->type), matmul); !st) return st;
    const int64_t cols = d.ne[0];
    const size_t rb = row_size(t->type, cols);
    if (!d.is_matrix()) {
      const int64_t n_rows = d.ne.size() > 1 ? d.ne[1] : 1;
      d.vec->assign(static_cast<size_t>(d.n_elements()), 0.0f);
      for (int64_t r = 0; r < n_rows; ++r) {
        dequantize_row(t->type, static_cast<const uint8_t*>(t->data) + static_cast<size_t>(r) * rb,
                       d.vec->data() + r * cols, cols);
      }
      continue;
    }
    if (d.experts != nullptr) {
      // Per expert: `experts`' rows, then (fused) `experts_second`'s.
      const int64_t rows = d.experts_second ? d.ne[1] / 2 : d.ne[1];
      const auto* base = static_cast<const uint8_t*>(t->data);
      d.experts->clear();
      if (d.experts_second) d.experts_second->clear();
      for (int64_t e = 0; e < d.ne[2]; ++e) {
        const uint8_t* first = base + static_cast<size_t>(e * d.ne[1]) * rb;
        d.experts->push_back(kernels::weight_view{t->type, rows, cols, first, rb});
        if (d.experts_second) {
          d.experts_second->push_back(kernels::weight_view{t->type, rows, cols, first + static_cast<size_t>(rows) * rb, rb});
        }
      }
      continue;
    }
    int64_t row0 = 0;
    for (const auto& [dst, rows] : d.slices) {
      *dst = kernels::weight_view{t->type, rows, cols, static_cast<const uint8_t*>(t->data) + static_cast<size_t>(row0) * rb, rb};
      row0 += rows;
    }
  }
  return status::ok();
}

}  // namespace cortex
