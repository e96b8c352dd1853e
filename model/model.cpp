#include "model/model.hpp"

#include <cmath>
#include <map>

#include "kernels/quant.hpp"
#include "model/arch.hpp"
#include "model/hparam_reader.hpp"
#include "model/tensor_table.hpp"
#include "text/tokenizer.hpp"

namespace cortex {

model::~model() = default;

expected<std::unique_ptr<model>> model::load(const std::string& path) {
  auto opened = gguf::file::open(path);
  if (!opened) return opened.error();
  std::unique_ptr<model> m(new model());
  m->file_ = std::move(*opened);
  const gguf::file& f = *m->file_;
  // A file that parses as GGUF but is not a usable model: malformed, or
  // unsupported where the code says so.
  auto err = [&](const status& st) { return fail(st.code, "model '" + path + "': " + st.message); };

  auto arch_key = f.get_string("general.architecture");
  if (!arch_key) return err(fail(errc::malformed, "missing metadata key 'general.architecture'"));
  const arch_def* arch = find_arch(std::string(*arch_key));
  if (arch == nullptr) {
    return err(fail(errc::unsupported, "unsupported architecture '" + std::string(*arch_key) +
                                           "' (supported: " + supported_archs() + ")"));
  }
  m->arch_ = arch;
  model_hparams& hp = m->hp_;
  hp.arch = arch->name;
  hparam_reader reader(f, arch->name);
  if (auto st = arch->read_hparams(reader, hp); !st) return err(st);

  auto* embd = f.find_tensor("token_embd.weight");
  if (!embd) return err(fail(errc::malformed, "missing tensor 'token_embd.weight'"));
  if (embd->ne[1] <= 0 || embd->ne[1] > (int64_t(1) << 30)) return err(fail(errc::malformed, "invalid token_embd.weight"));
  hp.n_vocab = static_cast<int>(embd->ne[1]);

  model_weights& w = m->w_;
  w.layers.resize(static_cast<size_t>(hp.n_layer));
  tensor_table table;
  arch->tensors(hp, w, table);
  if (auto st = table.bind(f); !st) return err(st);
  for (auto [name, factors] : {std::pair<const char*, const std::vector<float>*>{"rope_freqs.weight", &w.rope_freqs},
                                {"rope_factors_long.weight", &w.rope_long},
                                {"rope_factors_short.weight", &w.rope_short}}) {
    for (float ff : *factors) {
      if (!(ff > 0.0f) || !std::isfinite(ff)) {
        return err(fail(errc::malformed, std::string("tensor '") + name + "' holds " + std::to_string(ff) +
                                             "; every factor must be positive and finite"));
      }
    }
  }

  auto tok = tokenizer::from_gguf(f);
  if (!tok) return err(fail(tok.error().code, "tokenizer: " + tok.error().message));
  m->tok_ = std::move(*tok);
  if (m->tok_->n_vocab() != hp.n_vocab) {
    return err(fail(errc::malformed, "tokenizer has " + std::to_string(m->tok_->n_vocab()) +
                                         " tokens but token_embd has " + std::to_string(hp.n_vocab) + " rows"));
  }
  return m;
}

expected<std::unique_ptr<model>> model::load_vocab_only(const std::string& path) {
  auto opened = gguf::file::open(path);
  if (!opened) return opened.error();
  std::unique_ptr<model> m(new model());
  m->file_ = std::move(*opened);
  m->vocab_only_ = true;
  if (auto arch = m->file_->get_string("general.architecture")) m->hp_.arch = std::string(*arch);
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
  if (n && !n->empty() && *n != hp_.arch) return std::string(*n);
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
  // The embedding lookups read one row a token (the per-layer one too, where the model has it).
  double total = static_cast<double>(w_.token_embd.row_bytes + w_.per_layer_token_embd.row_bytes);
  for_each_matrix(w_, hp_.moe.n_used, [&](const kernels::weight_view& v, double share) { total += share * view_bytes(v); });
  return static_cast<size_t>(total);
}

std::string model::quant_name() const {
  std::map<std::string, size_t> bytes;
  for_each_matrix(w_, hp_.moe.n_used, [&](const kernels::weight_view& v, double) {
    if (&v != &w_.output) bytes[type_traits(v.type).name] += view_bytes(v);
  });
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
