// Which type each tensor of a model gets when it is quantized to a file type
// (Q4_K_M, Q8_0, ...): llama-quantize's rules (llama.cpp src/llama-quant.cpp,
// 2026-09-28, commit de3ff81) restated, so `cortex quantize` writes the same
// tensors in the same types, order and metadata as llama-quantize does,
// with or without an importance matrix. Pure planning: no tensor data is read, and
// nothing here knows which quantizers exist (model/quantize_file.hpp checks).
//
// The rules, as llama.cpp states them:
//  - only tensors of 2+ dimensions whose name ends in "weight" are quantized,
//    never norms, expert routers (ffn_gate_inp), position / token-type
//    embeddings, conv1d and a list of small tensors (tensor_may_quantize);
//  - output.weight (and token_embd.weight when there is no output.weight:
//    tied embeddings) becomes Q6_K, or Q8_0 for Q8_0 and MXFP4_MOE files and
//    when its row length is not a multiple of the file type's block;
//  - the _S/_M/_L mixes give attn_v, ffn_down, attn_output, attn_qkv more
//    bits, by layer ("use_more_bits": the first and last eighth of the
//    layers and every third between) and by GQA / expert count;
//  - a type whose block does not divide a row falls back: the 256-blocks to
//    Q4_0 (Q2_K, Q3_K), Q5_0 (Q4_K), Q5_1 (Q5_K), Q8_0 (Q6_K), IQ4_NL (IQ
//    types), and to F16 when even that does not divide the row.
// llama-quantize keys a few rules on architectures (falcon, bailingmoe3, and
// the 70B models whose attn_v gets more bits): those names appear here only
// because its rules name them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/ggml_type.hpp"
#include "base/expected.hpp"
#include "gguf/gguf.hpp"

namespace cortex::quantize {

// llama.cpp's llama_ftype: the number written to general.file_type.
enum class file_type : uint32_t {
  all_f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q8_0 = 7, q5_0 = 8, q5_1 = 9,
  q2_k = 10, q3_k_s = 11, q3_k_m = 12, q3_k_l = 13, q4_k_s = 14, q4_k_m = 15, q5_k_s = 16, q5_k_m = 17, q6_k = 18,
  iq2_xxs = 19, iq2_xs = 20, q2_k_s = 21, iq3_xs = 22, iq3_xxs = 23, iq1_s = 24, iq4_nl = 25, iq3_s = 26, iq3_m = 27,
  iq2_s = 28, iq2_m = 29, iq4_xs = 30, iq1_m = 31, bf16 = 32, tq1_0 = 36, tq2_0 = 37, mxfp4_moe = 38,
  q1_0 = 40, q2_0 = 41,
};

// GGML type ids the rules name that kernels/ggml_type.hpp does not (yet)
// enumerate; the numbers are ggml.h's.
namespace types {
constexpr ggml_type iq2_xxs = static_cast<ggml_type>(16), iq2_xs = static_cast<ggml_type>(17),
                    iq3_xxs = static_cast<ggml_type>(18), iq1_s = static_cast<ggml_type>(19),
                    iq4_nl = static_cast<ggml_type>(20), iq3_s = static_cast<ggml_type>(21),
                    iq2_s = static_cast<ggml_type>(22), iq4_xs = static_cast<ggml_type>(23),
                    iq1_m = static_cast<ggml_type>(29), tq1_0 = static_cast<ggml_type>(34),
                    tq2_0 = static_cast<ggml_type>(35), mxfp4 = static_cast<ggml_type>(39),
                    q1_0 = static_cast<ggml_type>(41), q2_0 = static_cast<ggml_type>(42);
}  // namespace types

// ggml's name of a type id ("q4_K", "iq4_nl"); "type <id>" if unknown.
std::string type_name(ggml_type t);
// ggml's block size of a type id (1 for f32/f16/bf16); 0 if unknown.
int64_t type_block_size(ggml_type t);

// A file type by llama-quantize's name (case-insensitive; "Q4_K" is Q4_K_M,
// "Q3_K" Q3_K_M, "Q5_K" Q5_K_M) or number; nullopt if it names none.
std::optional<file_type> parse_file_type(std::string_view name);
// llama-quantize's name ("Q4_K_M").
const char* file_type_name(file_type ft);
// Every name parse_file_type accepts, in llama-quantize's order, aliases
// included ("Q3_K" after "IQ3_M"...).
std::vector<std::string> file_type_names();
// The type most tensors get (llama_ftype_get_default_type).
ggml_type default_type(file_type ft);

// What the rules read from the model (llama.cpp's hparams of layer 0).
struct model_facts {
  std::string arch;   // general.architecture
  int n_layer = 0;    // <arch>.block_count (nextn / MTP layers included)
  int n_head = 0;     // <arch>.attention.head_count (layer 0 of an array)
  int n_head_kv = 0;  // <arch>.attention.head_count_kv, else n_head
  int n_expert = 0;   // <arch>.expert_count, else 0
  bool is_70b = false;  // llama.cpp's LLM_TYPE_70B (attn_v gets more bits)
  int n_gqa() const { return n_head_kv == 0 ? 0 : n_head / n_head_kv; }
};
// Reads them; an error names the missing key.
expected<model_facts> read_model_facts(const gguf::file& f);

// One tensor of the input, as its GGUF tensor table gives it.
struct tensor_desc {
  std::string name;
  ggml_type type = ggml_type::f32;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] = row length
};

struct options {
  bool pure = false;            // --pure: every quantizable tensor in the default type
  bool quantize_output = true;  // false: --leave-output-tensor
  // An importance matrix will be given (--imatrix): IQ3_XXS keeps IQ3_XXS
  // attn_v and ffn_down, IQ4_NL / IQ4_XS the first eighth of ffn_down, and
  // Q4_0 / Q5_0 take Q4_1 / Q5_1 for it.
  bool has_imatrix = false;
};

struct tensor_plan {
  size_t source = 0;   // index into the input's tensors
  std::string name;
  ggml_type from = ggml_type::f32, to = ggml_type::f32;
  int n_dims = 1;      // ggml_n_dims: trailing dimensions of 1 dropped
  int64_t ne[4] = {1, 1, 1, 1};
  bool fell_back = false;         // `to` is the fallback for an indivisible row
  bool requires_imatrix = false;  // llama-quantize refuses it without one
};

struct plan {
  file_type ftype = file_type::q8_0;
  bool has_imatrix = false;  // planned for an importance matrix (options::has_imatrix)
  // In llama-quantize's output order: tensors outside blk.N first, then by
  // layer number, by name within each.
  std::vector<tensor_plan> tensors;
  int n_fallback = 0;
};

// The plan for quantizing `tensors` of a model to `ftype`. Errors are
// llama-quantize's: an expert tensor of a MoE model outside blk.N, a layer
// number past block_count.
expected<plan> make_plan(const std::vector<tensor_desc>& tensors, const model_facts& facts, file_type ftype, const options& opt = {});

// llama-quantize's name filter (tensor_allows_quantization) for a tensor of
// n_dims dimensions.
bool tensor_may_quantize(const std::string& name, int n_dims, const options& opt = {});

}  // namespace cortex::quantize
