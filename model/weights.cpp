#include "model/weights.hpp"

namespace cortex {

layer_matrices matrices_of(const layer_weights& L) {
  layer_matrices m;
  auto add = [](std::vector<const kernels::weight_view*>& g, const kernels::weight_view& v) {
    if (v.data != nullptr) g.push_back(&v);
  };
  add(m.qkv, L.wq);
  add(m.qkv, L.wk);
  add(m.qkv, L.wv);
  add(m.qkv, L.ssm_qkv);
  add(m.qkv, L.ssm_gate);
  add(m.qkv, L.ssm_beta);
  add(m.qkv, L.ssm_alpha);
  add(m.wo, L.wo);
  add(m.wo, L.ssm_out);
  add(m.gate_up, L.w_gate);
  add(m.gate_up, L.w_up);
  add(m.down, L.w_down);
  add(m.per_layer_gate, L.per_layer_inp_gate);
  add(m.per_layer_proj, L.per_layer_proj);
  return m;
}

}  // namespace cortex
