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
         "quantizers and carrying a small SentencePiece vocabulary. For benchmarks and demos without a\n"
         "download: its output is random text. Real models are GGUF files (e.g. from Hugging Face).",
         {{"shape", "NAME", "one of: " + shapes, ""},
          {"type", "TYPE", "one of: " + types, "q4_0"},
          {"out", "PATH", "output file", ""},
          {"seed", "S", "weight seed", "1234"},
          {"threads", "N", "quantization threads; 0 = one per core", "0"}});
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
  int last_pct = -1;
  auto st = write_synthetic_model(*shape, a.get("type"), static_cast<uint64_t>(*seed), a.get("out"), thread_count(a),
                                  [&](int done, int total) {
                                    int pct = done * 100 / total;
                                    if (pct / 10 != last_pct / 10) {
                                      std::fprintf(stderr, "\r[make-model] %3d%% (%d/%d tensors, %.1f s)", pct, done, total, now_seconds() - t0);
                                      last_pct = pct;
                                    }
                                  });
  std::fprintf(stderr, "\n");
  if (!st) {
    std::fprintf(stderr, "cortex: %s\n", st.message.c_str());
    return 1;
  }
  std::fprintf(stderr, "[make-model] wrote %s (%s, %s, random weights) in %.1f s\n", a.get("out").c_str(), shape->name.c_str(),
               a.get("type").c_str(), now_seconds() - t0);
  return 0;
}

}  // namespace cortex::cli
