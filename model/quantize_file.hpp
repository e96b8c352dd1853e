// Quantizes a GGUF model file to a llama-quantize file type (`cortex
// quantize`): the plan of model/quantize_plan.hpp, executed with our
// quantizers (kernels/quant.hpp quantize_row, bit-identical to ggml's
// reference quantizers; with an importance matrix quantize_row_weighted),
// written as llama-quantize writes it: the input's metadata with
// general.quantization_version and general.file_type moved to the end
// (split.* dropped; then the quantize.imatrix.* keys), tensors in its order,
// 32-byte alignment. The output is byte for byte llama-quantize's, with or
// without an importance matrix (for the types cortex can write).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/expected.hpp"
#include "gguf/gguf.hpp"
#include "model/imatrix.hpp"
#include "model/quantize_plan.hpp"

namespace cortex::quantize {

// The plan for `in` (its tensors, with the rules' model facts read from its
// metadata).
expected<plan> plan_file(const gguf::file& in, file_type ftype, const options& opt = {});

// Why a plan cannot be carried out, found before any work: a tensor type
// with no quantizer here (the error names each such type and a tensor that
// needs it), a tensor that needs an importance matrix in a plan made
// without one (options::has_imatrix), a quantized
// input tensor that would change type (llama-quantize also refuses that
// without --allow-requantize).
status check_plan(const plan& p);

// Whether the file system of out_path's folder has `bytes` free (statvfs);
// the error gives both sizes.
status check_room(const std::string& out_path, uint64_t bytes);

struct progress {
  size_t index = 0;  // 1-based, of count
  size_t count = 0;
  const tensor_plan* tensor = nullptr;
  uint64_t bytes_in = 0, bytes_out = 0;  // this tensor's
  uint64_t bytes_out_total = 0;          // written so far
  uint64_t bytes_out_expected = 0;       // the whole output file
};

struct run_options {
  options rules;  // rules.has_imatrix is set from imatrix_path
  int n_threads = 1;  // quantization threads (rows in parallel; bytes do not depend on it)
  // llama.cpp importance matrix (model/imatrix.hpp), "" for none. Written
  // to the output's quantize.imatrix.file as given, as llama-quantize does.
  std::string imatrix_path;
};

// Each planned tensor's importance weights in `im` (nullptr: it has none, or
// is not quantized), n_cols * n_experts of them, as llama-quantize matches
// them: by name; an entry of the wrong size is an error (for token_embd it
// is ignored); a tensor whose type requires an importance matrix and has no
// entry is an error. `im_path` names the file in the errors.
expected<std::vector<const float*>> match_imatrix(const plan& p, const imatrix& im, const std::string& im_path);

// Quantizes in_path to out_path: plans, checks that out_path's file system
// has room for the whole output (statvfs) and that it is not the input,
// then writes a temporary file beside it and renames it into place, so
// out_path is either the complete new file or untouched. With
// opt.imatrix_path, reads it and matches it to the tensors first (every
// error before any work), quantizes with the weights and records it in the
// metadata as llama-quantize does (quantize.imatrix.file, .dataset,
// .entries_count, .chunks_count). `report` is called after each tensor.
status quantize_file(const std::string& in_path, const std::string& out_path, file_type ftype, const run_options& opt,
                     const std::function<void(const progress&)>& report = {});

}  // namespace cortex::quantize
