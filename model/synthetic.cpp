#include "model/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>

#include "kernels/quant.hpp"
#include "model/arch.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/tensor_table.hpp"

namespace cortex {

namespace {
synthetic_shape with(synthetic_shape s, void (*set)(synthetic_shape&)) {
  set(s);
  return s;
}
}  // namespace

const std::vector<synthetic_shape>& synthetic_shapes() {
  static const std::vector<synthetic_shape> shapes = {
      // name, arch, vocab, ctx, embd, layers, heads, kv heads, ffn, rope base, eps, tied
      {"tinyllama-1.1b", "llama", 32000, 2048, 2048, 22, 32, 4, 5632, 10000.0f, 1e-5f, false},
      {"llama-3.2-1b", "llama", 128256, 8192, 2048, 16, 32, 8, 8192, 500000.0f, 1e-5f, true},
      {"qwen2.5-0.5b", "qwen2", 151936, 32768, 896, 24, 14, 2, 4864, 1000000.0f, 1e-6f, true},
      {"tiny", "llama", 1024, 2048, 256, 4, 8, 2, 768, 10000.0f, 1e-5f, false},
      with(synthetic_shape{"tiny-moe", "qwen3moe", 1024, 2048, 256, 4, 8, 2, 768, 1000000.0f, 1e-6f, false},
           [](synthetic_shape& x) { x.n_expert = 8; x.n_expert_used = 2; x.n_ff_exp = 256; }),
      // Qwen3.5's MoE variant in miniature: two delta-net layers and two
      // attention layers, 8 experts (2 used) and a shared expert.
      with(synthetic_shape{"tiny-qwen35moe", "qwen35moe", 1024, 2048, 256, 4, 4, 2, 256, 10000000.0f, 1e-6f, false},
           [](synthetic_shape& x) {
             x.head_dim = 64; x.n_rot = 16; x.ssm_conv = 4; x.ssm_state = 32; x.ssm_groups = 2; x.ssm_v_heads = 4;
             x.full_attention_interval = 2; x.n_expert = 8; x.n_expert_used = 2; x.n_ff_exp = 128;
             x.rope_sections[0] = 3; x.rope_sections[1] = 3; x.rope_sections[2] = 2;
           }),
      // The published shapes (the models' config.json on Hugging Face), with
      // Llama 3.1's rope_freqs.weight. Mistral's 4096-token sliding window is
      // left out, as llama.cpp's 'llama' architecture also runs it.
      {"llama-3.1-8b", "llama", 128256, 131072, 4096, 32, 32, 8, 14336, 500000.0f, 1e-5f, false, "llama3", true},
      {"qwen2.5-7b", "qwen2", 152064, 131072, 3584, 28, 28, 4, 18944, 1000000.0f, 1e-6f, false, "qwen3"},
      {"mistral-7b", "llama", 32000, 32768, 4096, 32, 32, 8, 14336, 10000.0f, 1e-5f, false, "llama-spm"},
      {"qwen3-8b", "qwen3", 151936, 40960, 4096, 36, 32, 8, 12288, 1000000.0f, 1e-6f, false, "qwen3"},
      with(synthetic_shape{"qwen3-4b", "qwen3", 151936, 40960, 2560, 36, 32, 8, 9728, 1000000.0f, 1e-6f, true, "qwen3"},
           [](synthetic_shape& x) { x.head_dim = 128; }),
      // Gemma 3: 1024-token window on five layers of six, local rope base
      // 10000, linear x8 scaling on the global layers; the 262k vocabulary
      // of the Gemma family's vocab-only test file.
      with(synthetic_shape{"gemma3-4b", "gemma3", 262144, 131072, 2560, 34, 8, 4, 10240, 1000000.0f, 1e-6f, true, "gemma-4"},
           [](synthetic_shape& x) { x.head_dim = 256; x.sliding_window = 1024; x.rope_freq_base_swa = 10000.0f; x.rope_scale_linear = 8.0f; }),
      with(synthetic_shape{"gemma3-12b", "gemma3", 262144, 131072, 3840, 48, 16, 8, 15360, 1000000.0f, 1e-6f, true, "gemma-4"},
           [](synthetic_shape& x) { x.head_dim = 256; x.sliding_window = 1024; x.rope_freq_base_swa = 10000.0f; x.rope_scale_linear = 8.0f; }),
      // Phi-4-mini: partial rotary (96 of 128 dims), tied embeddings; its
      // LongRoPE factors are left out (they change no cost).
      with(synthetic_shape{"phi4-mini", "phi3", 200064, 131072, 3072, 32, 24, 8, 8192, 10000.0f, 1e-5f, true},
           [](synthetic_shape& x) { x.n_rot = 96; }),
      {"smollm3-3b", "smollm3", 128256, 65536, 2048, 36, 16, 4, 11008, 5000000.0f, 1e-6f, true, "llama3"},
      // Qwen3.5-9B: 32 layers, every fourth full attention (16 heads of 256,
      // 4 KV heads, 64 rotated dims, [q; gate] queries), the others gated
      // delta nets (16 key heads, 32 value heads of 128, conv 4); its own
      // 248k vocabulary.
      with(synthetic_shape{"qwen3.5-9b", "qwen35", 248320, 262144, 4096, 32, 16, 4, 12288, 10000000.0f, 1e-6f, false, "qwen35"},
           [](synthetic_shape& x) {
             x.head_dim = 256; x.n_rot = 64; x.ssm_conv = 4; x.ssm_state = 128; x.ssm_groups = 16; x.ssm_v_heads = 32;
             x.full_attention_interval = 4;
             x.rope_sections[0] = 11; x.rope_sections[1] = 11; x.rope_sections[2] = 10;
           }),
      // Qwen3-30B-A3B: 128 experts of width 768, 8 per token, 48 layers.
      with(synthetic_shape{"qwen3-30b-a3b", "qwen3moe", 151936, 40960, 2048, 48, 32, 4, 6144, 1000000.0f, 1e-6f, false, "qwen3"},
           [](synthetic_shape& x) { x.head_dim = 128; x.n_expert = 128; x.n_expert_used = 8; x.n_ff_exp = 768; }),
      // gpt-oss-20b: 32 experts of width 2880, 4 per token, 24 layers, a
      // 128-token window on alternate layers, YaRN x32 over 4096; its o200k
      // vocabulary is not among the golden vocabularies, so the built-in one
      // pads to its 201088 tokens.
      with(synthetic_shape{"gpt-oss-20b", "gpt-oss", 201088, 131072, 2880, 24, 64, 8, 2880, 150000.0f, 1e-5f, false},
           [](synthetic_shape& x) {
             x.head_dim = 64; x.n_expert = 32; x.n_expert_used = 4; x.n_ff_exp = 2880; x.sliding_window = 128;
             x.yarn_factor = 32.0f; x.yarn_orig_ctx = 4096;
           }),
      // Encoders. bge-small-en-v1.5 and bge-base-en-v1.5 (33M / 109M: 12
      // layers, CLS pooling) with their WordPiece vocabulary; the tiny ones
      // (the golden tests' files) on its first 4096 tokens, with 512
      // positions so that a 500-token input fits.
      with(synthetic_shape{"tiny-bert", "bert", 4096, 512, 32, 2, 4, 4, 64, 10000.0f, 1e-12f, false, "bert-bge"},
           [](synthetic_shape& x) { x.pooling_type = 1; x.truncate_vocab = true; }),
      with(synthetic_shape{"tiny-bert-rerank", "bert", 4096, 512, 32, 2, 4, 4, 64, 10000.0f, 1e-12f, false, "bert-bge"},
           [](synthetic_shape& x) { x.pooling_type = 4; x.truncate_vocab = true; }),
      with(synthetic_shape{"tiny-nomic-bert", "nomic-bert", 4096, 512, 32, 2, 4, 4, 64, 1000.0f, 1e-12f, false, "bert-bge"},
           [](synthetic_shape& x) { x.pooling_type = 1; x.truncate_vocab = true; }),
      with(synthetic_shape{"bge-small", "bert", 30522, 512, 384, 12, 12, 12, 1536, 10000.0f, 1e-12f, false, "bert-bge"},
           [](synthetic_shape& x) { x.pooling_type = 2; }),
      with(synthetic_shape{"bge-base", "bert", 30522, 512, 768, 12, 12, 12, 3072, 10000.0f, 1e-12f, false, "bert-bge"},
           [](synthetic_shape& x) { x.pooling_type = 2; }),
  };
  return shapes;
}

std::vector<float> llama3_rope_factors(int head_dim, float freq_base) {
  constexpr double factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, old_context = 8192.0;
  constexpr double pi = 3.14159265358979323846;
  const double low_freq_wavelen = old_context / low_freq_factor;
  const double high_freq_wavelen = old_context / high_freq_factor;
  std::vector<float> out;
  for (int i = 0; i < head_dim; i += 2) {
    const double freq = 1.0 / std::pow(static_cast<double>(freq_base), static_cast<double>(i) / head_dim);
    const double wavelen = 2.0 * pi / freq;
    double f = 1.0;
    if (wavelen > low_freq_wavelen) {
      f = factor;
    } else if (wavelen >= high_freq_wavelen) {
      const double smooth = (old_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

const synthetic_shape* find_synthetic_shape(const std::string& name) {
  for (auto& s : synthetic_shapes()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const char* const default_vocab_dir = "../shared/golden/tokenizer/vocab";

const std::vector<std::string>& synthetic_file_types() {
  static const std::vector<std::string> types = {"f32", "f16", "q8_0", "q4_0", "q4_k_m", "mxfp4_moe"};
  return types;
}

namespace {

// Counter-based splitmix64: element i of a row is a function of (row seed,
// i) alone, so weights are reproducible per (seed, tensor, row) whatever the
// threads, and a row fills in a loop the compiler can unroll freely.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// x[i] ~ approximately N(mean, stddev^2): the sum of four 16-bit uniforms of
// one 64-bit draw (Irwin-Hall, variance-corrected).
void fill_normal(float* x, int64_t n, uint64_t row_seed, float mean, float stddev) {
  const float k = 1.7320508f * stddev;  // sqrt(3): the sum of 4 U(0,1) has variance 1/3
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t a = mix64(row_seed + static_cast<uint64_t>(i + 1) * 0x9e3779b97f4a7c15ull);
    const auto u = static_cast<int32_t>((a & 0xffff) + ((a >> 16) & 0xffff) + ((a >> 32) & 0xffff) + (a >> 48));
    x[i] = mean + (static_cast<float>(u) * (1.0f / 65536.0f) - 2.0f) * k;
  }
}

uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A SentencePiece-style vocabulary: control tokens, 256 byte-fallback
// tokens, the pieces needed to spell common English words ("▁" + every
// prefix), then filler tokens up to n_vocab.
void add_vocabulary(gguf::writer& w, int n_vocab) {
  static const char* words[] = {
      "the", "and", "was", "to", "a", "he", "she", "it", "of", "in", "that", "his", "her", "they", "with", "for",
      "on", "you", "is", "said", "had", "but", "at", "one", "day", "little", "big", "happy", "time", "once",
      "upon", "there", "were", "very", "play", "friend", "friends", "saw", "went", "not", "so", "be", "all",
      "what", "we", "can", "like", "up", "out", "do", "this", "have", "from", "are", "by", "as", "an", "will",
      "would", "could", "about", "into", "after", "over", "new", "more", "some", "when", "then", "them", "him",
      "good", "cat", "dog", "girl", "boy", "tree", "sun", "house", "mom", "dad", "park", "ball", "red", "blue",
      "name", "named", "loved", "wanted", "looked", "found", "home", "fun", "help", "make", "made", "see", "look",
  };
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  char buf[16];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);
  }
  const std::string sp = "\xe2\x96\x81";  // U+2581, SentencePiece's space
  std::vector<std::string> pieces = {sp};
  for (char c = 'a'; c <= 'z'; ++c) pieces.push_back(std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) pieces.push_back(std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) pieces.push_back(std::string(1, c));
  for (const char* p : {".", ",", "!", "?", "'", "\"", "-", ":", ";", "(", ")"}) pieces.push_back(p);
  for (const char* word : words) {
    std::string full = sp + word;
    for (size_t n = sp.size() + 1; n <= full.size(); ++n) pieces.push_back(full.substr(0, n));
    std::string bare = word;
    for (size_t n = 2; n <= bare.size(); ++n) pieces.push_back(bare.substr(0, n));
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  for (auto& p : pieces) {
    if (static_cast<int>(tokens.size()) >= n_vocab) break;
    if (std::find(tokens.begin(), tokens.end(), p) != tokens.end()) continue;
    tokens.push_back(p);
    types.push_back(1);
    scores.push_back(-static_cast<float>(tokens.size()));  // earlier pieces merge first
  }
  while (static_cast<int>(tokens.size()) < n_vocab) {
    tokens.push_back("<extra_" + std::to_string(tokens.size()) + ">");
    types.push_back(5);  // unused
    scores.push_back(-1e9f);
  }
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
}

// Copies the tokenizer.* keys of a vocabulary-only GGUF, padding its token
// list (and types, scores) to n_vocab with unused "[PADi]" tokens, or with
// `truncate` cutting a longer list to its first n_vocab tokens.
status add_real_vocabulary(gguf::writer& w, const std::string& path, int n_vocab, bool truncate) {
  auto f = gguf::file::open(path);
  if (!f) {
    return fail(errc::invalid_param, "vocabulary '" + path + "' cannot be read (" + f.error().message +
                                         "); pass --vocab-dir with the folder of ggml-vocab-*.gguf files");
  }
  const auto* tokens = (*f)->get_string_array("tokenizer.ggml.tokens");
  if (tokens && truncate && tokens->size() > static_cast<size_t>(n_vocab)) {
    for (const auto& [key, v] : (*f)->metadata()) {
      if (key.rfind("tokenizer.", 0) == 0) w.set_value(key, v);
    }
    w.set_string_array("tokenizer.ggml.tokens", std::vector<std::string>(tokens->begin(), tokens->begin() + n_vocab));
    if (auto types = (*f)->get_i32_array("tokenizer.ggml.token_type")) {
      types->resize(static_cast<size_t>(n_vocab));
      w.set_i32_array("tokenizer.ggml.token_type", *types);
    }
    if (auto scores = (*f)->get_f32_array("tokenizer.ggml.scores")) {
      scores->resize(static_cast<size_t>(n_vocab));
      w.set_f32_array("tokenizer.ggml.scores", *scores);
    }
    return status::ok();
  }
  if (!tokens || tokens->size() > static_cast<size_t>(n_vocab)) {
    return fail(errc::invalid_param, "vocabulary '" + path + "' has " + (tokens ? std::to_string(tokens->size()) : "no") +
                                         " tokens, expected at most " + std::to_string(n_vocab));
  }
  for (const auto& [key, v] : (*f)->metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) w.set_value(key, v);
  }
  if (tokens->size() == static_cast<size_t>(n_vocab)) return status::ok();
  std::vector<std::string> padded(tokens->begin(), tokens->end());
  auto types = (*f)->get_i32_array("tokenizer.ggml.token_type");
  auto scores = (*f)->get_f32_array("tokenizer.ggml.scores");
  for (int i = static_cast<int>(padded.size()); i < n_vocab; ++i) {
    padded.push_back("[PAD" + std::to_string(i) + "]");
    if (types) types->push_back(5);  // unused
    if (scores) scores->push_back(-1e9f);
  }
  w.set_string_array("tokenizer.ggml.tokens", padded);
  if (types) w.set_i32_array("tokenizer.ggml.token_type", *types);
  if (scores) w.set_f32_array("tokenizer.ggml.scores", *scores);
  return status::ok();
}

// llama.cpp's llama_ftype of each file type (general.file_type).
uint32_t llama_ftype(const std::string& ftype) {
  if (ftype == "f16") return 1;
  if (ftype == "q4_0") return 2;
  if (ftype == "q8_0") return 7;
  if (ftype == "q4_k_m") return 15;
  if (ftype == "mxfp4_moe") return 38;
  return 0;  // f32
}

// llama-quantize's Q4_K_M rule: more bits for attn_v / ffn_down in the
// first and last eighth of the layers and every third layer between.
bool use_more_bits(int layer, int n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

ggml_type matrix_type(const std::string& ftype, const std::string& role, int layer, int n_layer) {
  if (ftype == "f32" || role == "ffn_gate_inp") return ggml_type::f32;  // llama-quantize keeps routers f32
  const bool expert = role.size() > 5 && role.compare(role.size() - 5, 5, "_exps") == 0;
  if (ftype == "mxfp4_moe") return expert ? static_cast<ggml_type>(39) : ggml_type::q8_0;
  if (role == "ffn_down_exps") return matrix_type(ftype, "ffn_down", layer, n_layer);
  if (ftype == "f16") return ggml_type::f16;
  if (ftype == "q8_0") return ggml_type::q8_0;
  if (ftype == "q4_0") return role == "output" ? ggml_type::q6_k : ggml_type::q4_0;
  // q4_k_m
  if (role == "output") return ggml_type::q6_k;
  if ((role == "attn_v" || role == "ffn_down") && use_more_bits(layer, n_layer)) return ggml_type::q6_k;
  return ggml_type::q4_k;
}

}  // namespace

status write_synthetic_model(const synthetic_shape& s, const std::string& ftype, uint64_t seed, const std::string& path,
                             int n_threads, const std::string& vocab_dir, const std::function<void(int, int)>& progress) {
  if (std::find(synthetic_file_types().begin(), synthetic_file_types().end(), ftype) == synthetic_file_types().end()) {
    return fail(errc::invalid_param, "unknown file type '" + ftype + "' (choose f32, f16, q8_0, q4_0, q4_k_m or mxfp4_moe)");
  }
  const std::string& arch = s.arch;
  gguf::writer w;
  w.set_string("general.architecture", arch);
  w.set_string("general.name", "synthetic " + s.name + " " + ftype + " (random weights)");
  w.set_u32("general.file_type", llama_ftype(ftype));
  w.set_u32(arch + ".vocab_size", static_cast<uint32_t>(s.n_vocab));
  w.set_u32(arch + ".context_length", static_cast<uint32_t>(s.n_ctx));
  w.set_u32(arch + ".embedding_length", static_cast<uint32_t>(s.n_embd));
  w.set_u32(arch + ".block_count", static_cast<uint32_t>(s.n_layer));
  w.set_u32(arch + ".feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.set_u32(arch + ".attention.head_count", static_cast<uint32_t>(s.n_head));
  w.set_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  const int head_dim = s.head_dim_or_default();
  if (s.head_dim > 0) {
    w.set_u32(arch + ".attention.key_length", static_cast<uint32_t>(head_dim));
    w.set_u32(arch + ".attention.value_length", static_cast<uint32_t>(head_dim));
  }
  w.set_u32(arch + ".rope.dimension_count", static_cast<uint32_t>(s.n_rot > 0 ? s.n_rot : head_dim));
  w.set_f32(arch + ".rope.freq_base", s.rope_freq_base);
  if (s.sliding_window > 0) w.set_u32(arch + ".attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
  if (s.rope_freq_base_swa > 0) w.set_f32(arch + ".rope.freq_base_swa", s.rope_freq_base_swa);
  if (s.rope_scale_linear > 0) {
    w.set_string(arch + ".rope.scaling.type", "linear");
    w.set_f32(arch + ".rope.scaling.factor", s.rope_scale_linear);
  }
  if (s.pooling_type >= 0) {
    w.set_f32(arch + ".attention.layer_norm_epsilon", s.rms_eps);
    w.set_bool(arch + ".attention.causal", false);
    w.set_u32(arch + ".pooling_type", static_cast<uint32_t>(s.pooling_type));
    w.set_u32("tokenizer.ggml.token_type_count", static_cast<uint32_t>(s.n_token_types));
  } else {
    w.set_f32(arch + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  }
  if (s.n_expert > 0) {
    if (s.ssm_conv > 0) w.set_u32(arch + ".expert_shared_feed_forward_length", static_cast<uint32_t>(s.n_ff));
    w.set_u32(arch + ".expert_count", static_cast<uint32_t>(s.n_expert));
    w.set_u32(arch + ".expert_used_count", static_cast<uint32_t>(s.n_expert_used));
    w.set_u32(arch + ".expert_feed_forward_length", static_cast<uint32_t>(s.n_ff_exp));
  }
  if (s.ssm_conv > 0) {
    w.set_u32(arch + ".ssm.conv_kernel", static_cast<uint32_t>(s.ssm_conv));
    w.set_u32(arch + ".ssm.state_size", static_cast<uint32_t>(s.ssm_state));
    w.set_u32(arch + ".ssm.group_count", static_cast<uint32_t>(s.ssm_groups));
    w.set_u32(arch + ".ssm.time_step_rank", static_cast<uint32_t>(s.ssm_v_heads));
    w.set_u32(arch + ".ssm.inner_size", static_cast<uint32_t>(s.ssm_v_heads * s.ssm_state));
    w.set_u32(arch + ".full_attention_interval", static_cast<uint32_t>(s.full_attention_interval));
  }
  if (s.rope_sections[0] + s.rope_sections[1] + s.rope_sections[2] + s.rope_sections[3] > 0) {
    w.set_i32_array(arch + ".rope.dimension_sections", {s.rope_sections[0], s.rope_sections[1], s.rope_sections[2], s.rope_sections[3]});
  }
  if (s.yarn_factor > 0) {
    w.set_string(arch + ".rope.scaling.type", "yarn");
    w.set_f32(arch + ".rope.scaling.factor", s.yarn_factor);
    w.set_u32(arch + ".rope.scaling.original_context_length", static_cast<uint32_t>(s.yarn_orig_ctx));
  }
  if (s.vocab.empty()) {
    add_vocabulary(w, s.n_vocab);
  } else {
    const std::string file = "ggml-vocab-" + s.vocab + ".gguf";
    if (vocab_dir.empty() && !std::ifstream(std::string(default_vocab_dir) + "/" + file).good()) {
      return fail(errc::invalid_param, "shape '" + s.name + "' carries a real vocabulary: pass --vocab-dir with a folder that holds " +
                                           file + " (llama.cpp's models/ folder has it)");
    }
    const std::string dir = vocab_dir.empty() ? default_vocab_dir : vocab_dir;
    if (auto st = add_real_vocabulary(w, dir + "/" + file, s.n_vocab, s.truncate_vocab); !st) return st;
  }

  // The architecture's own tensor table names every tensor, its shape and
  // role; the shape's choices (tied output, rope factors) pick among the
  // optional ones.
  const arch_def* a = find_arch(s.arch);
  if (a == nullptr) return fail(errc::invalid_param, "unknown architecture '" + s.arch + "' (supported: " + supported_archs() + ")");
  model_hparams hp;
  hp.arch = s.arch;
  hp.n_vocab = s.n_vocab;
  hp.n_embd = s.n_embd;
  hp.n_layer = s.n_layer;
  hp.n_head = s.n_head;
  hp.n_head_kv = s.n_head_kv;
  hp.head_dim = s.head_dim_or_default();
  hp.n_rot = s.n_rot > 0 ? s.n_rot : hp.head_dim;
  hp.n_ff = s.n_ff;
  hp.moe.n_expert = s.n_expert;
  hp.moe.n_used = s.n_expert_used;
  hp.moe.n_ff_exp = s.n_ff_exp;
  hp.attn.assign(static_cast<size_t>(s.n_layer), layer_attention{});
  hp.n_ctx_train = s.n_ctx;
  if (s.pooling_type >= 0) {
    hp.encoder.enabled = true;
    hp.encoder.pooling = static_cast<pooling_kind>(s.pooling_type);
    hp.encoder.n_token_types = s.n_token_types;
  }
  if (s.ssm_conv > 0) {
    hp.delta_net = {s.ssm_conv, s.ssm_state, s.ssm_groups, s.ssm_v_heads, s.ssm_state};
    for (int l = 0; l < s.n_layer; ++l) hp.attn[static_cast<size_t>(l)].recurrent = (l + 1) % s.full_attention_interval != 0;
  }
  model_weights unbound;
  unbound.layers.resize(static_cast<size_t>(s.n_layer));
  tensor_table table;
  a->tensors(hp, unbound, table);
  // rows: every row of the tensor (an expert tensor's experts one after the other).
  struct spec { std::string name; std::string role; int layer; std::vector<int64_t> ne; int64_t cols, rows; bool is_norm; ggml_type type; };
  std::vector<spec> specs;
  const int64_t hd = hp.head_dim;
  for (const tensor_decl& d : table.decls()) {
    const bool seen = std::any_of(specs.begin(), specs.end(), [&](const spec& x) { return x.name == d.name; });
    if (seen || (d.role == tensor_role::output && s.tied_embeddings) || (d.role == tensor_role::rope_freqs && !s.llama3_rope)) {
      continue;
    }
    if (!d.required && d.fallback == nullptr && d.role != tensor_role::rope_freqs) continue;  // optional extras
    specs.push_back({d.name, role_name(d.role), d.layer, d.ne, d.ne[0], d.n_elements() / d.ne[0], !d.is_matrix(), ggml_type::f32});
  }

  for (auto& sp : specs) {
    ggml_type t = sp.is_norm ? ggml_type::f32 : matrix_type(ftype, sp.role, sp.layer, s.n_layer);
    if (t == ggml_type::q4_k && sp.cols % 256 != 0) t = ggml_type::q8_0;  // k-quants need rows of 256
    if (t == ggml_type::q6_k && sp.cols % 256 != 0) t = ggml_type::q8_0;
    sp.type = t;
    w.declare_tensor(sp.name, t, sp.ne);
  }

  const int n_total = static_cast<int>(specs.size());
  return w.write(path, [&](size_t i, std::vector<uint8_t>& data) {
    const auto& sp = specs[i];
    const size_t rb = row_size(sp.type, sp.cols);
    // Weights ~ N(0, 1/sqrt(cols)) keep activations at a stable scale; norms are
    // near 1 and biases small, all seeded per row so threads do not matter.
    const float stddev = sp.role == "bias" ? 0.02f : 1.0f / std::sqrt(static_cast<float>(sp.cols));
    const uint64_t tensor_seed = seed ^ name_hash(sp.name);
    const int nt = std::max(1, std::min<int>(n_threads, static_cast<int>(sp.rows)));
    std::vector<std::thread> workers;
    for (int ti = 0; ti < nt; ++ti) {
      workers.emplace_back([&, ti] {
        std::vector<float> row(static_cast<size_t>(sp.cols));
        for (int64_t r = ti; r < sp.rows; r += nt) {
          const uint64_t row_seed = mix64(tensor_seed + static_cast<uint64_t>(r) * 0x2545f4914f6cdd1dull);
          if (sp.name.size() > 6 && sp.name.compare(sp.name.size() - 6, 6, ".ssm_a") == 0) {
            fill_normal(row.data(), sp.cols, row_seed, -1.0f, 0.1f);  // -exp(A_log): a decay below 1
          } else if (sp.role == "rope_freqs") {
            row = llama3_rope_factors(static_cast<int>(hd), s.rope_freq_base);
          } else if (sp.role == "norm") {
            fill_normal(row.data(), sp.cols, row_seed, 1.0f, 0.1f);
          } else {
            fill_normal(row.data(), sp.cols, row_seed, 0.0f, stddev);
          }
          quantize_row_fast(sp.type, row.data(), data.data() + rb * static_cast<size_t>(r), sp.cols);
        }
      });
    }
    for (auto& th : workers) th.join();
    if (progress) progress(static_cast<int>(i) + 1, n_total);
    return status::ok();
  });
}

}  // namespace cortex
