// An architecture's tensor table: every tensor its GGUF files hold, with
// the shape it must have, whether it may be absent, and where it lands in
// model_weights (a matrix, row slices of a fused matrix, or an f32 vector).
// One table serves the loader (bind), the synthetic writer (the list of
// tensors to generate) and the checks on types: nothing else lists a
// model's tensors.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/expected.hpp"
#include "gguf/gguf.hpp"
#include "model/weights.hpp"

namespace cortex {

// What a tensor is, for the writer's values and the quantizer's type rules
// (llama-quantize's categories).
enum class tensor_role : unsigned char {
  token_embd, output, attn_q, attn_k, attn_v, attn_qkv, attn_output, ffn_gate, ffn_up, ffn_gate_up, ffn_down,
  norm, bias, rope_freqs, ffn_gate_inp, ffn_gate_exps, ffn_up_exps, ffn_down_exps, attn_sinks,
  per_layer_embd,  // the matrices of per-layer token embeddings (Gemma 4), the lookup table aside
  classifier,      // a reranker's classifier head (cls, cls.output)
};
const char* role_name(tensor_role r);

struct tensor_decl {
  std::string name;
  std::vector<int64_t> ne;  // GGUF shape, ne[0] first (row length)
  tensor_role role;
  int layer = -1;           // -1: not in a layer
  bool required = true;
  // Where it lands: a matrix split into consecutive row slices (one slice
  // for a plain matrix), or a vector.
  std::vector<std::pair<kernels::weight_view*, int64_t>> slices;  // (destination, rows)
  std::vector<float>* vec = nullptr;
  // An absent optional matrix becomes this one (tied output embeddings).
  const kernels::weight_view* fallback = nullptr;
  // A 3-D expert tensor (ne = [cols, rows, n_expert]): one view per expert.
  std::vector<kernels::weight_view>* experts = nullptr;
  // Fused experts (ffn_gate_up_exps): each expert's rows are `experts`' rows,
  // then these; ne[1] is both together.
  std::vector<kernels::weight_view>* experts_second = nullptr;
  // Not needed (and not read) when the file has this tensor instead: the
  // split form of a fused alternative.
  std::string unless_present = {};
  bool is_matrix() const { return vec == nullptr; }
  int64_t n_elements() const {
    int64_t n = 1;
    for (int64_t e : ne) n *= e;
    return n;
  }
};

class tensor_table {
 public:
  // A matrix (rows, cols): GGUF ne = [cols, rows].
  void matrix(std::string name, int64_t cols, int64_t rows, kernels::weight_view* dst, tensor_role role, int layer,
              bool required = true);
  // A fused matrix whose rows are the parts, stacked in order (phi3's
  // attn_qkv = [q; k; v], ffn_up = [gate; up]).
  void fused(std::string name, int64_t cols, std::vector<std::pair<kernels::weight_view*, int64_t>> parts,
             tensor_role role, int layer);
  // The experts of a mixture-of-experts layer, one (rows, cols) matrix
  // each: GGUF ne = [cols, rows, n_expert].
  void experts(std::string name, int64_t cols, int64_t rows, int64_t n_expert, std::vector<kernels::weight_view>* dst,
               tensor_role role, int layer);
  // The experts' gate and up matrices (rows, cols) each: ffn_gate_exps and
  // ffn_up_exps, or the two fused in one ffn_gate_up_exps (GGUF ne = [cols,
  // 2 rows, n_expert], each expert's gate rows then its up rows), which
  // llama.cpp accepts in their place for the families that allow both. The
  // fused form is optional, so the synthetic writer writes the split one.
  void gate_up_experts(int layer, int64_t cols, int64_t rows, int64_t n_expert, std::vector<kernels::weight_view>* gate,
                       std::vector<kernels::weight_view>* up);
  // A vector of n floats (norms, biases, rope factors), stored f32.
  void vec(std::string name, int64_t n, std::vector<float>* dst, tensor_role role, int layer, bool required = true);
  // n_rows vectors of n floats, one after the other (per-expert biases:
  // GGUF ne = [n, n_rows]), stored f32.
  void vecs(std::string name, int64_t n, int64_t n_rows, std::vector<float>* dst, tensor_role role, int layer,
            bool required = true);
  // The output matrix, tied to `embd` when the file has no output.weight.
  void output(int64_t cols, int64_t rows, kernels::weight_view* dst, const kernels::weight_view* embd);

  const std::vector<tensor_decl>& decls() const { return decls_; }

  // Resolves every declared tensor in f: shape, type (a matrix needs a
  // matmul kernel for its type on this CPU, a vector a dequantizer), and
  // binds the destinations. Errors name the tensor and what is wrong.
  status bind(const gguf::file& f) const;

 private:
  std::vector<tensor_decl> decls_;
};

// "blk.<layer>.<what>.weight" / ".bias"
std::string layer_tensor(int layer, const char* what, const char* suffix = "weight");

}  // namespace cortex
