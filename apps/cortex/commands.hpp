// The cortex subcommands. Each returns the process exit code: 0 success,
// 1 runtime failure (bad model file, I/O), 2 usage error.
#pragma once

namespace cortex::cli {

int cmd_generate(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_template(int argc, char** argv);
int cmd_logits(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_make_model(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_submit(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_cancel(int argc, char** argv);
int cmd_stats(int argc, char** argv);
int cmd_health(int argc, char** argv);
int cmd_models(int argc, char** argv);
int cmd_keys(int argc, char** argv);      // "keys": dispatches to its subcommands (cmd_keys.cpp)
int cmd_keys_new(int argc, char** argv);  // "keys new" (cmd_keys_new.cpp)

}  // namespace cortex::cli
