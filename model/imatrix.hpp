// llama.cpp's importance matrix (`llama-imatrix` output), read for
// `cortex quantize --imatrix`: per weight tensor, the mean squared
// activation of each input column, which the quantizers use as weights.
//
// Two formats, told apart by the GGUF magic:
//  - GGUF (llama-imatrix's default): per tensor NAME, `NAME.in_sum2` (F32,
//    [n_cols, n_mat]: the summed squares of the activations each column
//    saw, per expert for 3-D expert tensors, n_mat = 1 otherwise) and
//    `NAME.counts` (F32, [1, n_mat]: how many activations each expert
//    saw), with metadata imatrix.datasets, imatrix.chunk_count and
//    imatrix.chunk_size. The weights are in_sum2 / round(count), per
//    expert; an expert no token reached (count 0, as a MoE model's unused
//    experts are) gets weights of 1, as llama-quantize gives it.
//  - legacy `.dat` (--output-format dat): int32 entry count, then per entry
//    int32 name length, name, int32 ncall, int32 n_values, n_values float
//    sums (already means times ncall); then optionally int32 chunk count,
//    int32 length and the dataset name. Weights are sums / ncall.
//
// Every malformed file is an error naming the file, the tensor and what is
// wrong: unreadable or truncated, no entries, an in_sum2 without its counts
// (or the reverse), a non-F32 tensor, sizes that do not divide into
// experts, counts that are negative, non-finite or all zero, sums that are
// negative or non-finite, missing imatrix.* metadata (llama-quantize's
// "missing imatrix metadata"). Never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/expected.hpp"

namespace cortex::quantize {

struct imatrix {
  // Per tensor name: its column weights, n_mat blocks of n_cols
  // (n_mat = experts of a 3-D tensor, else 1), all finite and >= 0.
  std::map<std::string, std::vector<float>> weights;
  std::vector<std::string> datasets;  // imatrix.datasets (legacy: its dataset name)
  uint32_t chunk_count = 0;           // imatrix.chunk_count (legacy: the trailing count)
  bool legacy = false;                // read from the .dat format
};

// Reads `path` (GGUF or legacy .dat, whichever it is).
expected<imatrix> read_imatrix(const std::string& path);

}  // namespace cortex::quantize
