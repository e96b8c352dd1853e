#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "model/synthetic.hpp"

namespace cortex::cli {

int cmd_make_model(int argc, char** argv) {
  std::string shapes, types;
  for (auto& s : synthetic_shapes()) shapes += (shapes.empty() ? "" : ", ") + s.name;
  for (auto& t : synthetic_file_types()) types += (types.empty() ? "" : ", ") + t;
  args a("make-model",
         "Writes a GGUF model with seeded random weights in a real model's shape, quantized with our own\n"
         "quantizers, carrying a small SentencePiece vocabulary or (7-8B shapes) a real one of the model's\n"
         "size from --vocab-dir. Written one tensor at a time, so an 8B model needs no more memory than its\n"
         "largest tensor. For benchmarks and demos without a download: its output is random text. Real\n"
         "models are GGUF files (e.g. from Hugging Face).",
         {{"shape", "NAME", "one of: " + shapes, ""},
          {"type", "TYPE", "one of: " + types, "q4_0"},
          {"out", "PATH", "output file", ""},
          {"seed", "S", "weight seed", "1234"},
          {"threads", "N", "quantization threads; 0 = one per core", "0"},
          {"vocab-dir", "DIR",
           "folder of ggml-vocab-*.gguf, as llama.cpp's models/ folder (llama-3.1-8b: llama3, qwen2.5-7b: qwen3, "
           "mistral-7b: llama-spm); default: the project's reference vocabularies, where they are beside the checkout",
           ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  const auto* shape = find_synthetic_shape(a.get("shape"));
  if (!shape) {
    std::fprintf(stderr, "cortex: --shape must be one of: %s\n", shapes.c_str());
    return 2;
  }
  if (!a.has("out")) { std::fprintf(stderr, "cortex: --out PATH is required\n"); return 2; }
  auto seed = a.get_int("seed");
  if (!seed) { std::fprintf(stderr, "cortex: %s\n", a.error().c_str()); return 2; }
  const double t0 = now_seconds();
  double last_print = t0;
  auto st = write_synthetic_model(*shape, a.get("type"), static_cast<uint64_t>(*seed), a.get("out"), thread_count(a),
                                  shape->vocab.empty() ? "" : a.get("vocab-dir"), [&](int done, int total) {
                                    const double now = now_seconds();
                                    if (now - last_print < 1.0 && done < total) return;  // at most once a second
                                    last_print = now;
                                    std::fprintf(stderr, "\r[make-model] %3d%% (%d/%d tensors, %.0f s)", done * 100 / total, done, total,
                                                 now - t0);
                                  });
  std::fprintf(stderr, "\n");
  if (!st) {
    std::fprintf(stderr, "cortex: %s\n", st.message.c_str());
    return 1;
  }
  struct stat st_out {};
  const double gib = ::stat(a.get("out").c_str(), &st_out) == 0 ? st_out.st_size / 1073741824.0 : 0.0;
  std::fprintf(stderr, "[make-model] wrote %s (%s, %s, random weights, %.2f GiB) in %.1f s\n", a.get("out").c_str(),
               shape->name.c_str(), a.get("type").c_str(), gib, now_seconds() - t0);
  return 0;
}

}  // namespace cortex::cli
