// Helpers shared by the cortex subcommands.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/common/args.hpp"
#include "kernels/kv_type.hpp"
#include "model/model.hpp"

namespace cortex::cli {

// Parses; prints usage or the error. Returns -1 to continue, else the exit code.
int parse_args(args& a, int argc, char** argv);
// Loads --model (required), printing a clear error on failure. vocab_only:
// metadata and tokenizer only (also accepts vocabulary-only GGUF files).
std::unique_ptr<model> load_model(args& a, bool vocab_only = false);
// A command that computes logits: false after saying that m is an
// embedding model (an encoder) and what to use instead.
bool check_generates(const model& m, const char* command);
// The --threads value (0 = one per core).
int thread_count(args& a);
// The --kv-type option (kv_type_option_spec()) checked against m's head_dim;
// false after printing what to fix.
bool read_kv_type(args& a, const model& m, kernels::kv_type& out);
option_spec kv_type_option_spec();
// "1,2,3" -> ids; false on a malformed list.
bool parse_id_list(const std::string& s, std::vector<int32_t>& out);
// Whole file, or stdin for "-".
bool read_text(const std::string& path, std::string& out);
double now_seconds();

}  // namespace cortex::cli
