#include "model/quantize_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace cortex::quantize {

namespace {

using t = ggml_type;

struct type_row { uint32_t id; const char* name; int64_t block; bool quantized; };

// ggml.c's type_traits: name, block size, is_quantized.
constexpr type_row k_types[] = {
    {0, "f32", 1, false},      {1, "f16", 1, false},      {2, "q4_0", 32, true},      {3, "q4_1", 32, true},
    {6, "q5_0", 32, true},     {7, "q5_1", 32, true},     {8, "q8_0", 32, true},      {9, "q8_1", 32, true},
    {10, "q2_K", 256, true},   {11, "q3_K", 256, true},   {12, "q4_K", 256, true},    {13, "q5_K", 256, true},
    {14, "q6_K", 256, true},   {15, "q8_K", 256, true},   {16, "iq2_xxs", 256, true}, {17, "iq2_xs", 256, true},
    {18, "iq3_xxs", 256, true}, {19, "iq1_s", 256, true}, {20, "iq4_nl", 32, true},   {21, "iq3_s", 256, true},
    {22, "iq2_s", 256, true},  {23, "iq4_xs", 256, true}, {24, "i8", 1, false},       {25, "i16", 1, false},
    {26, "i32", 1, false},     {27, "i64", 1, false},     {28, "f64", 1, false},      {29, "iq1_m", 256, true},
    {30, "bf16", 1, false},    {34, "tq1_0", 256, true},  {35, "tq2_0", 256, true},   {39, "mxfp4", 32, true},
    {40, "nvfp4", 64, true},   {41, "q1_0", 128, true},   {42, "q2_0", 64, true},
};

const type_row* find_type(ggml_type type) {
  for (const auto& r : k_types) {
    if (r.id == static_cast<uint32_t>(type)) return &r;
  }
  return nullptr;
}

bool is_quantized(ggml_type type) {
  const type_row* r = find_type(type);
  return r != nullptr && r->quantized;
}

struct file_type_row { const char* name; file_type ft; };

// tools/quantize/quantize.cpp's QUANT_OPTIONS, in its order (COPY left out).
constexpr file_type_row k_file_types[] = {
    {"Q1_0", file_type::q1_0},       {"Q2_0", file_type::q2_0},       {"Q4_0", file_type::q4_0},
    {"Q4_1", file_type::q4_1},       {"MXFP4_MOE", file_type::mxfp4_moe}, {"Q5_0", file_type::q5_0},
    {"Q5_1", file_type::q5_1},       {"IQ2_XXS", file_type::iq2_xxs}, {"IQ2_XS", file_type::iq2_xs},
    {"IQ2_S", file_type::iq2_s},     {"IQ2_M", file_type::iq2_m},     {"IQ1_S", file_type::iq1_s},
    {"IQ1_M", file_type::iq1_m},     {"TQ1_0", file_type::tq1_0},     {"TQ2_0", file_type::tq2_0},
    {"Q2_K", file_type::q2_k},       {"Q2_K_S", file_type::q2_k_s},   {"IQ3_XXS", file_type::iq3_xxs},
    {"IQ3_S", file_type::iq3_s},     {"IQ3_M", file_type::iq3_m},     {"Q3_K", file_type::q3_k_m},
    {"IQ3_XS", file_type::iq3_xs},   {"Q3_K_S", file_type::q3_k_s},   {"Q3_K_M", file_type::q3_k_m},
    {"Q3_K_L", file_type::q3_k_l},   {"IQ4_NL", file_type::iq4_nl},   {"IQ4_XS", file_type::iq4_xs},
    {"Q4_K", file_type::q4_k_m},     {"Q4_K_S", file_type::q4_k_s},   {"Q4_K_M", file_type::q4_k_m},
    {"Q5_K", file_type::q5_k_m},     {"Q5_K_S", file_type::q5_k_s},   {"Q5_K_M", file_type::q5_k_m},
    {"Q6_K", file_type::q6_k},       {"Q8_0", file_type::q8_0},       {"F16", file_type::f16},
    {"BF16", file_type::bf16},       {"F32", file_type::all_f32},
};

bool is_alias(const char* name) {
  return !std::strcmp(name, "Q3_K") || !std::strcmp(name, "Q4_K") || !std::strcmp(name, "Q5_K");
}

// llama_model_loader's weight_name_comparer: sscanf(name, "blk.%d.") or -1.
int layer_of(const std::string& name) {
  if (name.compare(0, 4, "blk.") != 0) return -1;
  const char* p = name.c_str() + 4;
  char* end = nullptr;
  const long v = std::strtol(p, &end, 10);
  return end == p ? -1 : static_cast<int>(v);
}

enum class category { token_embd, attn_q, attn_v, attn_k, attn_qkv, attn_kv_b, attn_output, ffn_up, ffn_gate, ffn_down, output, other };

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

bool is_token_embd(const std::string& n) { return n == "token_embd.weight" || n == "per_layer_token_embd.weight"; }

// tensor_get_category, in its order of tests.
category category_of(const std::string& n) {
  if (n == "output.weight") return category::output;
  if (is_token_embd(n)) return category::token_embd;
  if (has(n, "attn_qkv.weight")) return category::attn_qkv;
  if (has(n, "attn_kv_b.weight")) return category::attn_kv_b;
  if (has(n, "attn_v.weight")) return category::attn_v;
  if (has(n, "attn_k.weight")) return category::attn_k;
  if (has(n, "attn_q.weight")) return category::attn_q;
  if (has(n, "attn_output.weight")) return category::attn_output;
  if (has(n, "ffn_up")) return category::ffn_up;
  if (has(n, "ffn_gate")) return category::ffn_gate;
  if (has(n, "ffn_down")) return category::ffn_down;
  return category::other;
}

// attn_v-like tensors, more sensitive to quantization.
bool is_attn_v(category c) { return c == category::attn_v || c == category::attn_qkv || c == category::attn_kv_b; }

bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

// quantize_state_impl: the counters the rules advance tensor by tensor.
struct state {
  const model_facts& facts;
  bool has_imatrix = false;
  int n_attention_wv = 0, n_ffn = 0;  // n_ffn: n_ffn_down = n_ffn_gate = n_ffn_up
  int i_attention_wv = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
  bool has_tied_embeddings = true;
};

using ft = file_type;

bool is_iq2_or_iq1(ft f) {
  return f == ft::iq2_xxs || f == ft::iq2_xs || f == ft::iq1_s || f == ft::iq2_s || f == ft::iq2_m || f == ft::iq1_m;
}

// llama_tensor_get_type_impl's layer_info: the counter for dense models, the
// name's layer for MoE (their experts are not in layer order).
expected<int> layer_index(const state& qs, int counter, const std::string& name) {
  if (qs.facts.n_expert <= 1) return counter;
  const int il = layer_of(name);
  if (name.compare(0, 4, "blk.") != 0 || il == -1) return fail(errc::invalid_param, "failed to determine the layer of tensor " + name);
  if (il < 0 || il >= qs.n_ffn) {
    return fail(errc::invalid_param, "bad layer " + std::to_string(il) + " for tensor " + name + ": must be in [0, " +
                                         std::to_string(qs.n_ffn) + ")");
  }
  return il;
}

// llama_tensor_get_type_impl, rule for rule.
expected<ggml_type> mix_type(state& qs, ggml_type new_type, const tensor_desc& tensor, ft ftype, category cat) {
  const std::string& name = tensor.name;
  const std::string& arch = qs.facts.arch;
  const bool falcon = arch == "falcon";
  const int n_gqa = qs.facts.n_gqa();
  const int n_expert = qs.facts.n_expert;

  if (cat == category::output || (qs.has_tied_embeddings && cat == category::token_embd)) {
    const int64_t nx = tensor.ne[0];
    const int64_t qk_k = type_block_size(new_type);
    if (ftype == ft::mxfp4_moe) {
      new_type = t::q8_0;
    } else if (falcon || nx % qk_k != 0) {
      new_type = t::q8_0;
    } else if (ftype == ft::iq2_xxs || ftype == ft::iq2_xs || ftype == ft::iq3_xxs || ftype == ft::iq1_s ||
               ftype == ft::iq2_s || ftype == ft::iq2_m || ftype == ft::iq1_m) {
      new_type = t::q5_k;
    } else if (new_type != t::q8_0) {
      new_type = t::q6_k;
    }
  } else if (ftype == ft::mxfp4_moe) {
    // Expert tensors (3-D) to MXFP4, the rest to Q8_0.
    const bool bailing_expert = arch == "bailingmoe3" && (cat == category::ffn_up || cat == category::ffn_gate || cat == category::ffn_down);
    new_type = tensor.ne[2] > 1 && (arch != "bailingmoe3" || bailing_expert) ? types::mxfp4 : t::q8_0;
  } else if (cat == category::token_embd) {
    if (ftype == ft::iq2_xxs || ftype == ft::iq2_xs || ftype == ft::iq1_s || ftype == ft::iq1_m) {
      new_type = t::q2_k;
    } else if (ftype == ft::iq2_s || ftype == ft::iq2_m || ftype == ft::iq3_xxs) {
      new_type = types::iq3_s;
    } else if (ftype == ft::tq1_0 || ftype == ft::tq2_0 || ftype == ft::q2_0) {
      new_type = t::q4_k;
    }
  } else if (is_iq2_or_iq1(ftype)) {
    const bool iq2_s_or_m = ftype == ft::iq2_s || ftype == ft::iq2_m;
    if (is_attn_v(cat)) {
      if (n_gqa >= 4 || n_expert >= 4) new_type = t::q4_k;
      else new_type = iq2_s_or_m ? types::iq3_s : t::q2_k;
      ++qs.i_attention_wv;
    } else if (n_expert == 8 && cat == category::attn_k) {
      new_type = t::q4_k;
    } else if (cat == category::ffn_down) {
      if (qs.i_ffn_down < qs.n_ffn / 8) new_type = iq2_s_or_m ? types::iq3_s : t::q2_k;
      ++qs.i_ffn_down;
    } else if (cat == category::attn_output) {
      if (n_expert == 8) {
        new_type = t::q5_k;
      } else if (ftype == ft::iq1_s || ftype == ft::iq1_m) {
        new_type = types::iq2_xxs;
      } else if (iq2_s_or_m) {
        new_type = types::iq3_s;
      }
    }
  } else if (is_attn_v(cat)) {
    const bool no_imatrix = !qs.has_imatrix;
    if (ftype == ft::q2_k) {
      new_type = n_gqa >= 4 ? t::q4_k : t::q3_k;
    } else if (ftype == ft::q2_k_s && n_gqa >= 4) {
      new_type = t::q4_k;
    } else if (ftype == ft::iq3_xxs) {
      new_type = n_gqa >= 4 ? t::q4_k : no_imatrix ? types::iq3_s : types::iq3_xxs;
    } else if ((ftype == ft::iq3_xs || ftype == ft::iq3_s) && n_gqa >= 4) {
      new_type = t::q4_k;
    } else if (ftype == ft::iq3_m) {
      new_type = t::q4_k;
    } else if (ftype == ft::q3_k_m) {
      new_type = qs.i_attention_wv < 2 ? t::q5_k : t::q4_k;
    } else if (ftype == ft::q3_k_l) {
      new_type = t::q5_k;
    } else if ((ftype == ft::iq4_nl || ftype == ft::iq4_xs) && n_gqa >= 4) {
      new_type = t::q5_k;
    } else if ((ftype == ft::q4_k_m || ftype == ft::q5_k_m) && use_more_bits(qs.i_attention_wv, qs.n_attention_wv)) {
      new_type = t::q6_k;
    } else if (ftype == ft::q4_k_s && qs.i_attention_wv < 4) {
      new_type = t::q5_k;
    }
    // 70B: 8 heads share each attn_v row, so more bits there cost little.
    if (qs.facts.is_70b && (new_type == t::q3_k || new_type == t::q4_k)) new_type = t::q5_k;
    if (n_expert == 8) new_type = t::q8_0;
    ++qs.i_attention_wv;
  } else if (cat == category::attn_k) {
    if (n_expert == 8) new_type = t::q8_0;
    else if (ftype == ft::iq3_xs) new_type = types::iq3_xxs;
    else if (ftype == ft::iq3_xxs) new_type = types::iq2_s;
  } else if (cat == category::attn_q) {
    if (ftype == ft::iq3_xs) new_type = types::iq3_xxs;
    else if (ftype == ft::iq3_xxs) new_type = types::iq2_s;
  } else if (cat == category::ffn_down) {
    auto il = layer_index(qs, qs.i_ffn_down, name);
    if (!il) return il.error();
    const int i_layer = *il, n_layer = qs.n_ffn;
    if (ftype == ft::q2_k) {
      new_type = t::q3_k;
    } else if (ftype == ft::q2_k_s) {
      if (i_layer < n_layer / 8) new_type = t::q4_k;
    } else if (ftype == ft::iq3_xxs && !qs.has_imatrix) {
      new_type = i_layer < n_layer / 8 ? t::q4_k : t::q3_k;
    } else if (ftype == ft::q3_k_m) {
      new_type = i_layer < n_layer / 16 ? t::q5_k : !falcon || use_more_bits(i_layer, n_layer) ? t::q4_k : t::q3_k;
    } else if (ftype == ft::iq3_m && (i_layer < n_layer / 8 || (n_expert == 8 && use_more_bits(i_layer, n_layer)))) {
      new_type = t::q4_k;
    } else if (ftype == ft::q3_k_l) {
      new_type = falcon ? t::q4_k : t::q5_k;
    } else if (ftype == ft::q4_k_m) {
      if (falcon) {
        new_type = i_layer < n_layer / 16 ? t::q6_k : use_more_bits(i_layer, n_layer) ? t::q5_k : t::q4_k;
      } else if (use_more_bits(i_layer, n_layer)) {
        new_type = t::q6_k;
      }
    } else if (i_layer < n_layer / 8 && (ftype == ft::iq4_nl || ftype == ft::iq4_xs) && !qs.has_imatrix) {
      new_type = t::q5_k;
    } else if (ftype == ft::q5_k_m && use_more_bits(i_layer, n_layer)) {
      new_type = t::q6_k;
    } else if (ftype == ft::q4_k_s && !falcon && i_layer < n_layer / 8) {
      new_type = t::q5_k;
    } else if ((ftype == ft::q4_0 || ftype == ft::q5_0) && qs.has_imatrix && i_layer < n_layer / 8) {
      // llama.cpp guards the first ffn_down layers of Q4_0 / Q5_0 with a
      // min; only with an importance matrix, so that files without one stay
      // as they always were.
      new_type = ftype == ft::q4_0 ? t::q4_1 : t::q5_1;
    }
    ++qs.i_ffn_down;
  } else if (cat == category::attn_output) {
    if (!falcon) {
      if (n_expert == 8) {
        if (ftype == ft::q2_k || ftype == ft::iq3_xs || ftype == ft::iq3_xxs || ftype == ft::q3_k_s || ftype == ft::q3_k_m ||
            ftype == ft::iq4_nl || ftype == ft::q4_k_s || ftype == ft::q4_k_m || ftype == ft::iq3_s || ftype == ft::iq3_m ||
            ftype == ft::iq4_xs) {
          new_type = t::q5_k;
        }
      } else {
        if (ftype == ft::q2_k) new_type = t::q3_k;
        else if (ftype == ft::iq3_xxs) new_type = types::iq3_s;
        else if (ftype == ft::q3_k_m) new_type = t::q4_k;
        else if (ftype == ft::q3_k_l) new_type = t::q5_k;
        else if (ftype == ft::iq3_m) new_type = t::q4_k;
      }
    } else if (ftype == ft::q3_k_l) {
      new_type = t::q4_k;
    }
  } else if (cat == category::ffn_gate || cat == category::ffn_up) {
    // (llama.cpp also has an attn_qkv branch here; attn_qkv never reaches it,
    // being attn_v-like above.)
    int& counter = cat == category::ffn_gate ? qs.i_ffn_gate : qs.i_ffn_up;
    auto il = layer_index(qs, counter, name);
    if (!il) return il.error();
    if (ftype == ft::iq3_xs && *il >= qs.n_ffn / 8 && *il < 7 * qs.n_ffn / 8) new_type = types::iq3_xxs;
    ++counter;
  }
  return new_type;
}

// tensor_type_fallback: a type whose block does not divide the row.
expected<ggml_type> fallback_type(ggml_type target, int64_t ncols, bool& fell_back) {
  const int64_t qk = type_block_size(target);
  fell_back = false;
  if (ncols % qk == 0) return target;
  fell_back = true;
  ggml_type r = target;
  switch (static_cast<uint32_t>(target)) {
    case 19: case 29: case 16: case 17: case 22: case 18: case 21: case 23:  // IQ1_S/M, IQ2_*, IQ3_*, IQ4_XS
      r = types::iq4_nl;
      break;
    case 42: case 10: case 11: case 34: case 35:  // Q2_0, Q2_K, Q3_K, TQ1_0, TQ2_0
      r = t::q4_0;
      break;
    case 12: r = t::q5_0; break;  // Q4_K
    case 13: r = t::q5_1; break;  // Q5_K
    case 14: r = t::q8_0; break;  // Q6_K
    default:
      if (qk > 32) return fail(errc::invalid_param, "no tensor type fallback is defined for type " + type_name(target));
      break;  // a 32-block type: F16 below
  }
  if (ncols % type_block_size(r) != 0) r = t::f16;
  return r;
}

// tensor_requires_imatrix.
bool requires_imatrix(const std::string& name, ggml_type type, ft ftype) {
  if (is_token_embd(name) || name == "output.weight") return false;
  if (type == types::iq3_xxs || type == types::iq2_xxs || type == types::iq2_xs || type == types::iq2_s ||
      type == types::iq1_m || type == types::iq1_s) {
    return true;
  }
  return type == t::q2_k && ftype == ft::q2_k_s;
}

int n_dims_of(const int64_t ne[4]) {
  for (int d = 3; d >= 1; --d) {
    if (ne[d] != 1) return d + 1;
  }
  return 1;
}

}  // namespace

std::string type_name(ggml_type type) {
  const type_row* r = find_type(type);
  return r ? r->name : "type " + std::to_string(static_cast<uint32_t>(type));
}

int64_t type_block_size(ggml_type type) {
  const type_row* r = find_type(type);
  return r ? r->block : 0;
}

std::optional<file_type> parse_file_type(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& r : k_file_types) {
    if (upper == r.name) return r.ft;
  }
  if (!upper.empty() && std::all_of(upper.begin(), upper.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    const long v = std::strtol(upper.c_str(), nullptr, 10);
    for (const auto& r : k_file_types) {
      if (static_cast<long>(r.ft) == v) return r.ft;
    }
  }
  return std::nullopt;
}

const char* file_type_name(file_type ft) {
  for (const auto& r : k_file_types) {
    if (r.ft == ft && !is_alias(r.name)) return r.name;
  }
  return "?";
}

std::vector<std::string> file_type_names() {
  std::vector<std::string> out;
  for (const auto& r : k_file_types) out.emplace_back(r.name);
  return out;
}

ggml_type default_type(file_type f) {
  switch (f) {
    case ft::q4_0: return t::q4_0;
    case ft::q4_1: return t::q4_1;
    case ft::q5_0: return t::q5_0;
    case ft::q5_1: return t::q5_1;
    case ft::q8_0: return t::q8_0;
    case ft::f16: return t::f16;
    case ft::bf16: return t::bf16;
    case ft::all_f32: return t::f32;
    case ft::q1_0: return types::q1_0;
    case ft::q2_0: return types::q2_0;
    case ft::mxfp4_moe: return types::mxfp4;
    case ft::q2_k_s: case ft::q2_k: return t::q2_k;
    case ft::iq3_xs: return types::iq3_s;
    case ft::q3_k_s: case ft::q3_k_m: case ft::q3_k_l: return t::q3_k;
    case ft::q4_k_s: case ft::q4_k_m: return t::q4_k;
    case ft::q5_k_s: case ft::q5_k_m: return t::q5_k;
    case ft::q6_k: return t::q6_k;
    case ft::tq1_0: return types::tq1_0;
    case ft::tq2_0: return types::tq2_0;
    case ft::iq2_xxs: return types::iq2_xxs;
    case ft::iq2_xs: case ft::iq2_s: return types::iq2_xs;
    case ft::iq2_m: return types::iq2_s;
    case ft::iq3_xxs: return types::iq3_xxs;
    case ft::iq1_s: return types::iq1_s;
    case ft::iq1_m: return types::iq1_m;
    case ft::iq4_nl: return types::iq4_nl;
    case ft::iq4_xs: return types::iq4_xs;
    case ft::iq3_s: case ft::iq3_m: return types::iq3_s;
  }
  return t::f32;
}

expected<model_facts> read_model_facts(const gguf::file& f) {
  model_facts m;
  auto arch = f.get_string("general.architecture");
  if (!arch) return fail(errc::invalid_param, f.path() + ": no general.architecture");
  m.arch = std::string(*arch);
  const std::string p = m.arch + ".";
  auto block_count = f.get_uint(p + "block_count");
  if (!block_count || *block_count == 0) return fail(errc::invalid_param, f.path() + ": no " + p + "block_count");
  m.n_layer = static_cast<int>(*block_count);
  // A per-layer array or a scalar; llama.cpp's rules read layer 0.
  auto first = [&](const std::string& key) -> std::optional<int> {
    if (auto v = f.get_uint(key)) return static_cast<int>(*v);
    if (auto a = f.get_i32_array(key); a && !a->empty()) return (*a)[0];
    return std::nullopt;
  };
  m.n_head = first(p + "attention.head_count").value_or(0);
  m.n_head_kv = first(p + "attention.head_count_kv").value_or(m.n_head);
  m.n_expert = static_cast<int>(f.get_uint(p + "expert_count").value_or(0));
  // llama.cpp's LLM_TYPE_70B (src/models/<arch>.cpp: load_arch_hparams),
  // on n_layer() = block_count - nextn_predict_layers.
  const int n_layer = m.n_layer - static_cast<int>(f.get_uint(p + "nextn_predict_layers").value_or(0));
  if (m.arch == "llama") m.is_70b = m.n_expert != 8 && n_layer == 80 && m.n_head != m.n_head_kv;
  if (m.arch == "qwen2" || m.arch == "deci" || m.arch == "olmo") m.is_70b = n_layer == 80;
  if (m.arch == "jais2") m.is_70b = n_layer == 68;
  return m;
}

bool tensor_may_quantize(const std::string& name, int n_dims, const options& opt) {
  if (n_dims < 2) return false;
  if (name.size() < 6 || name.compare(name.size() - 6, 6, "weight") != 0) return false;
  if (has(name, "_norm.weight")) return false;
  if (!opt.quantize_output && name == "output.weight") return false;
  static const char* const k_kept[] = {
      "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj", "ssm_conv1d",
      "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight", "time_mix_first.weight",
      "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
      "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
      "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
      "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
      ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
  };
  for (const char* part : k_kept) {
    if (has(name, part)) return false;
  }
  return name != "position_embd.weight" && name != "token_types.weight";
}

expected<plan> make_plan(const std::vector<tensor_desc>& tensors, const model_facts& facts, file_type ftype, const options& opt) {
  plan out;
  out.ftype = ftype;
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });

  out.has_imatrix = opt.has_imatrix;
  state qs{facts};
  qs.has_imatrix = opt.has_imatrix;
  qs.n_ffn = facts.n_layer;
  for (const auto& d : tensors) {
    const category c = category_of(d.name);
    if (is_attn_v(c)) ++qs.n_attention_wv;
    if (c == category::output) qs.has_tied_embeddings = false;
  }

  const ggml_type base = default_type(ftype);
  for (size_t i : order) {
    const tensor_desc& d = tensors[i];
    tensor_plan tp;
    tp.source = i;
    tp.name = d.name;
    tp.from = tp.to = d.type;
    std::copy(d.ne, d.ne + 4, tp.ne);
    tp.n_dims = n_dims_of(d.ne);
    if (tensor_may_quantize(d.name, tp.n_dims, opt)) {
      ggml_type type = base;
      if (is_quantized(base)) {
        if (!opt.pure) {
          auto mixed = mix_type(qs, type, d, ftype, category_of(d.name));
          if (!mixed) return mixed.error();
          type = *mixed;
        }
        auto fb = fallback_type(type, d.ne[0], tp.fell_back);
        if (!fb) return fb.error();
        type = *fb;
        out.n_fallback += tp.fell_back ? 1 : 0;
      }
      tp.to = type;
      tp.requires_imatrix = requires_imatrix(d.name, type, ftype);
    }
    out.tensors.push_back(std::move(tp));
  }
  return out;
}

}  // namespace cortex::quantize
