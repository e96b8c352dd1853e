// quantize: IN.gguf OUT.gguf TYPE, as llama-quantize does it.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "kernels/quant.hpp"
#include "model/quantize_file.hpp"

namespace cortex::cli {

namespace {

std::string size_text(uint64_t n) {
  char buf[32];
  if (n >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", n / 1073741824.0);
  else if (n >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", n / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  return buf;
}

// The tensor types cortex can write (those with a quantizer).
std::string writable_types() {
  std::string out;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto t = static_cast<ggml_type>(id);
    if (quantize_supported(t)) out += (out.empty() ? "" : " ") + quantize::type_name(t);
  }
  return out;
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  std::string names;
  for (auto& n : quantize::file_type_names()) names += (names.empty() ? "" : " ") + n;
  args a("quantize",
         "arguments: IN.gguf OUT.gguf TYPE (cortex quantize IN.gguf OUT.gguf TYPE [options])\n\n"
         "Quantizes an F32, F16 or BF16 GGUF model to a file type, as llama-quantize (llama.cpp 2026-09-28) does:\n"
         "the same type for every tensor (the _S/_M/_L mixes, output and token_embd rules, more bits for\n"
         "attn_v / ffn_down, fallbacks for rows that are not a whole number of blocks), the same metadata\n"
         "(general.file_type, general.quantization_version) and the same bytes, with or without an importance\n"
         "matrix (--imatrix).\n"
         "Progress goes to stderr. The output is written to OUT.gguf.tmp and renamed, after checking that\n"
         "the disk has room for it.\n\n"
         "TYPE (llama-quantize's names; Q4_K = Q4_K_M, Q3_K = Q3_K_M, Q5_K = Q5_K_M):\n  " + names +
         "\nA type whose tensors need a quantizer cortex does not have yet stops before any work, naming it.\n"
         "Tensor types cortex writes: " + writable_types() + ".",
         {{"threads", "N", "quantization threads; 0 = one per core", "0"},
          {"pure", "", "every quantizable tensor in TYPE's base type (no mixes, no output rule)", ""},
          {"leave-output-tensor", "", "leave output.weight as it is", ""},
          {"dry-run", "", "print each tensor's planned type and the output size; write nothing", ""},
          {"imatrix", "FILE",
           "importance matrix from llama-imatrix (its GGUF, or the legacy .dat): each tensor's column weights "
           "(in_sum2 / counts, per expert) steer Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS and the "
           "grid types IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S toward the columns that matter, as "
           "llama-quantize --imatrix does (same bytes; Q8_0 and MXFP4 ignore it). It also changes the mixes "
           "(Q4_0/Q5_0 give the first ffn_down layers Q4_1/Q5_1; IQ4_NL/IQ4_XS keep their ffn_down) and is "
           "required by Q2_K_S and the IQ1/IQ2/IQ3_XXS types (IQ1_S, IQ1_M, IQ2_XXS and IQ2_XS tensors are only "
           "written with it). A tensor it has no entry for is quantized without weights; an entry of the wrong "
           "size is an error",
           ""}});
  // Positional IN OUT TYPE among the --options.
  std::vector<std::string> positional;
  std::vector<char*> opts;
  for (int i = 0; i < argc; ++i) {
    const bool is_option = std::strncmp(argv[i], "-", 1) == 0 && std::strlen(argv[i]) > 1;
    if (!is_option) { positional.emplace_back(argv[i]); continue; }
    opts.push_back(argv[i]);
    const bool takes_value = !std::strcmp(argv[i], "--threads") || !std::strcmp(argv[i], "--imatrix");
    if (takes_value && i + 1 < argc) opts.push_back(argv[++i]);
  }
  if (int rc = parse_args(a, static_cast<int>(opts.size()), opts.data()); rc >= 0) return rc;
  if (positional.size() != 3) {
    std::fprintf(stderr, "cortex: usage: cortex quantize IN.gguf OUT.gguf TYPE [options] (see --help)\n");
    return 2;
  }
  const std::string& in_path = positional[0];
  const std::string& out_path = positional[1];
  const auto ftype = quantize::parse_file_type(positional[2]);
  if (!ftype) {
    std::fprintf(stderr, "cortex: unknown file type '%s'; one of: %s\n", positional[2].c_str(), names.c_str());
    return 2;
  }
  quantize::run_options opt;
  opt.n_threads = thread_count(a);
  opt.rules.pure = a.has("pure");
  opt.rules.quantize_output = !a.has("leave-output-tensor");
  if (a.has("imatrix")) {
    opt.imatrix_path = a.get("imatrix");
    if (opt.imatrix_path.empty()) {
      std::fprintf(stderr, "cortex: --imatrix needs a file (llama-imatrix's output)\n");
      return 2;
    }
  }
  opt.rules.has_imatrix = !opt.imatrix_path.empty();

  if (a.has("dry-run")) {
    auto in = gguf::file::open(in_path);
    if (!in) { std::fprintf(stderr, "cortex: %s\n", in.error().message.c_str()); return 1; }
    auto p = quantize::plan_file(**in, *ftype, opt.rules);
    if (!p) { std::fprintf(stderr, "cortex: %s\n", p.error().message.c_str()); return 1; }
    if (opt.rules.has_imatrix) {
      auto im = quantize::read_imatrix(opt.imatrix_path);
      if (!im) { std::fprintf(stderr, "cortex: %s\n", im.error().message.c_str()); return 1; }
      if (auto m = quantize::match_imatrix(*p, *im, opt.imatrix_path); !m) {
        std::fprintf(stderr, "cortex: %s\n", m.error().message.c_str());
        return 1;
      }
    }
    uint64_t total = 0;
    for (const auto& tp : p->tensors) {
      const bool writable = tp.from == tp.to || quantize_supported(tp.to);
      const uint64_t bytes = writable ? row_size(tp.to, tp.ne[0]) * static_cast<uint64_t>(tp.ne[1] * tp.ne[2] * tp.ne[3]) : 0;
      total += bytes;
      std::printf("%-40s %-8s -> %-8s %10s%s%s\n", tp.name.c_str(), quantize::type_name(tp.from).c_str(),
                  quantize::type_name(tp.to).c_str(), writable ? size_text(bytes).c_str() : "?",
                  tp.fell_back ? "  (fallback: row length)" : "", writable ? "" : "  (no quantizer yet)");
    }
    std::printf("%zu tensors, %s of tensor data, %d fell back\n", p->tensors.size(), size_text(total).c_str(), p->n_fallback);
    if (auto ok = quantize::check_plan(*p); !ok) {
      std::fprintf(stderr, "cortex: %s\n", ok.message.c_str());
      return 1;
    }
    return 0;
  }

  const double t0 = now_seconds();
  std::fprintf(stderr, "[quantize] %s -> %s as %s, %d threads%s%s\n", in_path.c_str(), out_path.c_str(),
               quantize::file_type_name(*ftype), opt.n_threads, opt.imatrix_path.empty() ? "" : ", importance matrix ",
               opt.imatrix_path.c_str());
  uint64_t total_in = 0, total_out = 0;
  auto st = quantize::quantize_file(in_path, out_path, *ftype, opt, [&](const quantize::progress& pr) {
    total_in += pr.bytes_in;
    total_out = pr.bytes_out_expected;
    const auto& tp = *pr.tensor;
    std::fprintf(stderr, "[quantize] [%4zu/%4zu] %-36s %6s -> %-7s %10s -> %10s  (%s of %s)\n", pr.index, pr.count,
                 tp.name.c_str(), quantize::type_name(tp.from).c_str(), quantize::type_name(tp.to).c_str(),
                 size_text(pr.bytes_in).c_str(), size_text(pr.bytes_out).c_str(), size_text(pr.bytes_out_total).c_str(),
                 size_text(pr.bytes_out_expected).c_str());
  });
  if (!st) {
    std::fprintf(stderr, "cortex: %s\n", st.message.c_str());
    return 1;
  }
  std::fprintf(stderr, "[quantize] wrote %s (%s; its tensors were %s) in %.1f s\n", out_path.c_str(),
               size_text(total_out).c_str(), size_text(total_in).c_str(), now_seconds() - t0);
  return 0;
}

}  // namespace cortex::cli
