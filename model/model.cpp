#include "model/model.hpp"

#include <cmath>
#include <map>

#include "kernels/quant.hpp"
#include "model/tokenizer.hpp"

namespace cortex {

const char* arch_name(model_arch a) { return a == model_arch::qwen2 ? "qwen2" : "llama"; }

namespace {

std::string shape_str(const gguf::tensor_info& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
  return s + "]";
}

// Resolves tensors by name and checks their shape (GGUF order: ne[0] first).
class tensor_loader {
 public:
  explicit tensor_loader(const gguf::file& f) : f_(f) {}
  const std::string& error() const { return err_; }
  bool ok() const { return err_.empty(); }

  const gguf::tensor_info* get(const std::string& name, std::vector<int64_t> shape, bool required = true) {
    if (!ok()) return nullptr;
    auto* t = f_.find_tensor(name);
    if (!t) {
      if (required) err_ = "missing tensor '" + name + "'";
      return nullptr;
    }
    bool match = true;
    for (size_t d = 0; d < 4; ++d) {
      const int64_t want = d < shape.size() ? shape[d] : 1;
      if (t->ne[d] != want) match = false;
    }
    if (!match) {
      std::string want = "[";
      for (size_t d = 0; d < shape.size(); ++d) want += (d ? ", " : "") + std::to_string(shape[d]);
      err_ = "tensor '" + name + "' has shape " + shape_str(*t) + ", expected " + want + "]";
      return nullptr;
    }
    if (!type_traits(t->type).supported) {
      err_ = "tensor '" + name + "' has type " + std::string(type_traits(t->type).name) + ", which is not supported";
      return nullptr;
    }
    return t;
  }

  kernels::weight_view matrix(const std::string& name, int64_t cols, int64_t rows) {
    auto* t = get(name, {cols, rows});
    if (!t) return {};
    return kernels::weight_view{t->type, rows, cols, t->data, row_size(t->type, cols)};
  }

  std::vector<float> vec(const std::string& name, int64_t n, bool required = true) {
    auto* t = get(name, {n}, required);
    if (!t) return {};
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(t->type, t->data, out.data(), n);
    return out;
  }

 private:
  const gguf::file& f_;
  std::string err_;
};

}  // namespace

model::~model() = default;

expected<std::unique_ptr<model>> model::load(const std::string& path) {
  auto opened = gguf::file::open(path);
  if (!opened) return opened.error();
  std::unique_ptr<model> m(new model());
  m->file_ = std::move(*opened);
  const gguf::file& f = *m->file_;
  // A file that parses as GGUF but is not a usable model: malformed, or
  // unsupported where the code says so.
  auto err = [&](const std::string& what, errc code = errc::malformed) { return fail(code, "model '" + path + "': " + what); };

  auto arch = f.get_string("general.architecture");
  if (!arch) return err("missing metadata key 'general.architecture'");
  model_hparams& hp = m->hp_;
  if (*arch == "llama") {
    hp.arch = model_arch::llama;
  } else if (*arch == "qwen2") {
    hp.arch = model_arch::qwen2;
    hp.rope_neox = true;
  } else {
    return err("unsupported architecture '" + std::string(*arch) + "' (supported: llama, qwen2)", errc::unsupported);
  }
  const std::string a(*arch);
  auto need_uint = [&](const std::string& key, int& out) -> bool {
    auto v = f.get_uint(a + "." + key);
    if (!v || *v == 0 || *v > (1u << 30)) return false;
    out = static_cast<int>(*v);
    return true;
  };
  for (auto [key, dst] : std::initializer_list<std::pair<const char*, int*>>{
           {"context_length", &hp.n_ctx_train}, {"embedding_length", &hp.n_embd}, {"block_count", &hp.n_layer},
           {"feed_forward_length", &hp.n_ff}, {"attention.head_count", &hp.n_head}}) {
    if (!need_uint(key, *dst)) return err("missing or invalid metadata key '" + a + "." + key + "'");
  }
  hp.n_head_kv = hp.n_head;
  if (f.find(a + ".attention.head_count_kv") && !need_uint("attention.head_count_kv", hp.n_head_kv)) {
    return err("invalid metadata key '" + a + ".attention.head_count_kv'");
  }
  if (hp.n_embd % hp.n_head != 0) return err("embedding_length is not a multiple of head_count");
  if (hp.n_head % hp.n_head_kv != 0) return err("head_count is not a multiple of head_count_kv");
  hp.head_dim = hp.n_embd / hp.n_head;
  if (hp.head_dim > 256) return err("head dimension " + std::to_string(hp.head_dim) + " > 256 is not supported", errc::unsupported);
  hp.n_rot = hp.head_dim;
  if (auto r = f.get_uint(a + ".rope.dimension_count")) {
    if (*r == 0 || *r > static_cast<uint64_t>(hp.head_dim) || *r % 2) return err("invalid rope.dimension_count");
    hp.n_rot = static_cast<int>(*r);
  }
  if (auto e = f.get_float(a + ".attention.layer_norm_rms_epsilon")) hp.rms_eps = static_cast<float>(*e);
  if (auto b = f.get_float(a + ".rope.freq_base")) hp.rope_freq_base = static_cast<float>(*b);
  if (hp.rms_eps <= 0 || !(hp.rope_freq_base > 0)) return err("invalid rms epsilon or rope base");
  // RoPE scaling, as llama.cpp reads it. Linear scaling divides positions;
  // YaRN and LongRoPE change the rotation itself and are refused rather than
  // run with wrong logits.
  const std::string scaling(f.get_string(a + ".rope.scaling.type").value_or(""));
  if (!scaling.empty() && scaling != "none" && scaling != "linear") {
    return err("rope scaling type '" + scaling + "' (" + a + ".rope.scaling.type) is not supported (supported: none, linear)",
               errc::unsupported);
  }
  float rope_factor = 0.0f;
  if (auto v = f.get_float(a + ".rope.scale_linear")) rope_factor = static_cast<float>(*v);
  if (auto v = f.get_float(a + ".rope.scaling.factor"); v && scaling != "none") rope_factor = static_cast<float>(*v);
  if (rope_factor != 0.0f) {
    if (!(rope_factor > 0.0f) || !std::isfinite(rope_factor)) return err("invalid rope scaling factor " + std::to_string(rope_factor));
    hp.rope_freq_scale = 1.0f / rope_factor;
  }

  auto* embd = f.find_tensor("token_embd.weight");
  if (!embd) return err("missing tensor 'token_embd.weight'");
  hp.n_vocab = static_cast<int>(embd->ne[1]);

  tensor_loader ld(f);
  const int64_t d = hp.n_embd, dq = int64_t(hp.n_head) * hp.head_dim, dkv = hp.n_embd_kv(), ff = hp.n_ff;
  model_weights& w = m->w_;
  w.token_embd = ld.matrix("token_embd.weight", d, hp.n_vocab);
  w.output_norm = ld.vec("output_norm.weight", d);
  if (f.find_tensor("output.weight")) {
    w.output = ld.matrix("output.weight", d, hp.n_vocab);
  } else {
    w.output = w.token_embd;  // tied embeddings
  }
  w.rope_freqs = ld.vec("rope_freqs.weight", hp.n_rot / 2, false);
  for (float ff : w.rope_freqs) {
    if (!(ff > 0.0f) || !std::isfinite(ff)) return err("tensor 'rope_freqs.weight' holds " + std::to_string(ff) + "; every factor must be positive and finite");
  }
  w.layers.resize(static_cast<size_t>(hp.n_layer));
  for (int l = 0; l < hp.n_layer && ld.ok(); ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    layer_weights& L = w.layers[static_cast<size_t>(l)];
    L.attn_norm = ld.vec(p + "attn_norm.weight", d);
    L.wq = ld.matrix(p + "attn_q.weight", d, dq);
    L.wk = ld.matrix(p + "attn_k.weight", d, dkv);
    L.wv = ld.matrix(p + "attn_v.weight", d, dkv);
    L.wo = ld.matrix(p + "attn_output.weight", dq, d);
    const bool need_bias = hp.arch == model_arch::qwen2;
    L.bq = ld.vec(p + "attn_q.bias", dq, need_bias);
    L.bk = ld.vec(p + "attn_k.bias", dkv, need_bias);
    L.bv = ld.vec(p + "attn_v.bias", dkv, need_bias);
    L.ffn_norm = ld.vec(p + "ffn_norm.weight", d);
    L.w_gate = ld.matrix(p + "ffn_gate.weight", d, ff);
    L.w_up = ld.matrix(p + "ffn_up.weight", d, ff);
    L.w_down = ld.matrix(p + "ffn_down.weight", ff, d);
  }
  if (!ld.ok()) return err(ld.error());

  auto tok = tokenizer::from_gguf(f);
  if (!tok) return err("tokenizer: " + tok.error().message, tok.error().code);
  m->tok_ = std::move(*tok);
  if (m->tok_->n_vocab() != hp.n_vocab) {
    return err("tokenizer has " + std::to_string(m->tok_->n_vocab()) + " tokens but token_embd has " +
               std::to_string(hp.n_vocab) + " rows");
  }
  return m;
}

expected<std::unique_ptr<model>> model::load_vocab_only(const std::string& path) {
  auto opened = gguf::file::open(path);
  if (!opened) return opened.error();
  std::unique_ptr<model> m(new model());
  m->file_ = std::move(*opened);
  m->vocab_only_ = true;
  if (auto arch = m->file_->get_string("general.architecture"); arch && *arch == "qwen2") m->hp_.arch = model_arch::qwen2;
  auto tok = tokenizer::from_gguf(*m->file_);
  if (!tok) return fail(tok.error().code, "model '" + path + "': tokenizer: " + tok.error().message);
  m->tok_ = std::move(*tok);
  m->hp_.n_vocab = m->tok_->n_vocab();
  return m;
}

// general.name when it says more than the architecture (stories260K's says
// just "llama"), else the file name without .gguf.
std::string model::name() const {
  auto n = file_->get_string("general.name");
  if (n && !n->empty() && *n != arch_name(hp_.arch)) return std::string(*n);
  auto p = file_->path();
  auto slash = p.find_last_of('/');
  std::string base = slash == std::string::npos ? p : p.substr(slash + 1);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0) base.resize(base.size() - 5);
  return base;
}

namespace {
size_t view_bytes(const kernels::weight_view& v) { return static_cast<size_t>(v.rows) * v.row_bytes; }
}  // namespace

size_t model::bytes_per_token() const {
  size_t total = view_bytes(w_.output) + w_.token_embd.row_bytes;
  for (auto& L : w_.layers) {
    for (auto* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) total += view_bytes(*v);
  }
  return total;
}

std::string model::quant_name() const {
  std::map<std::string, size_t> bytes;
  for (auto& L : w_.layers) {
    for (auto* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      bytes[type_traits(v->type).name] += view_bytes(*v);
    }
  }
  std::string best;
  size_t most = 0;
  for (auto& [k, b] : bytes) {
    if (b > most) { most = b; best = k; }
  }
  return best;
}

uint64_t model::n_params() const {
  uint64_t n = 0;
  for (auto& t : file_->tensors()) n += static_cast<uint64_t>(t.n_elements());
  return n;
}

}  // namespace cortex
