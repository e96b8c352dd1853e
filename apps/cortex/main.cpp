// cortex: command-line tools for CortexStream (generation, tokenization,
// logits and perplexity checks, model inspection and synthesis, benchmarks).
#include <cstdio>
#include <cstring>
#include <string>

#include "apps/cortex/commands.hpp"

namespace {

struct command {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

const command k_commands[] = {
    {"generate", cortex::cli::cmd_generate, "generate text from a prompt (streams to stdout)"},
    {"tokenize", cortex::cli::cmd_tokenize, "print the token ids of a text"},
    {"template", cortex::cli::cmd_template, "render a chat template for a conversation (as transformers does)"},
    {"logits", cortex::cli::cmd_logits, "print the top logits at every position of a token sequence (JSON)"},
    {"embed", cortex::cli::cmd_embed, "embedding of a text or token list (mean-pooled, L2-normalized)"},
    {"perplexity", cortex::cli::cmd_perplexity, "perplexity of a text file, as llama.cpp computes it"},
    {"info", cortex::cli::cmd_info, "show a model's metadata, tensor types and sizes"},
    {"make-model", cortex::cli::cmd_make_model, "write a GGUF model with seeded random weights in a real shape"},
    {"quantize", cortex::cli::cmd_quantize, "quantize an F32/F16/BF16 GGUF to a file type (Q4_K_M, Q8_0...) as llama-quantize does"},
    {"bench", cortex::cli::cmd_bench, "measure prefill and decode speed and memory bandwidth"},
    {"submit", cortex::cli::cmd_submit, "send a prompt or chat turns to cortexd and stream the text (--json: protocol messages)"},
    {"chat", cortex::cli::cmd_chat, "chat with cortexd: multi-turn, streaming, Ctrl-C stops an answer"},
    {"cancel", cortex::cli::cmd_cancel, "cancel requests on cortexd by id"},
    {"stats", cortex::cli::cmd_stats, "cortexd's statistics"},
    {"health", cortex::cli::cmd_health, "cortexd's health"},
    {"models", cortex::cli::cmd_models, "the models cortexd serves"},
    {"keys", cortex::cli::cmd_keys, "credentials for cortexd --auth: 'keys new' (API key), 'keys curve' (CURVE pair)"},
};

void print_usage(FILE* out) {
  std::fprintf(out,
               "usage: cortex <command> [options]\n\n"
               "CortexStream command-line tools. 'cortex <command> --help' describes each command.\n\ncommands:\n");
  for (auto& c : k_commands) std::fprintf(out, "  %-12s %s\n", c.name, c.help);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (auto& c : k_commands) {
    if (std::strcmp(argv[1], c.name) == 0) return c.run(argc - 2, argv + 2);
  }
  std::fprintf(stderr, "cortex: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}
