#!/usr/bin/python3
"""Writes a tiny Gemma 4 mixture-of-experts GGUF (the 26B-A4B layer shape)
with seeded random weights, for a golden made with llama.cpp.

It starts from ../shared/golden/arch/gemma4-f32.gguf (every dense Gemma 4
feature on: per-layer embeddings, KV sharing, sliding/full layers of their
own head sizes, proportional RoPE, softcap) and gives every layer experts
beside its dense FFN, as llama.cpp's gemma4 graph reads them:
  - router: ffn_gate_inp (n_embd -> n_expert) over
    rmsnorm(attn_out) / sqrt(n_embd) * ffn_gate_inp.scale;
  - experts on pre_ffw_norm_2(attn_out): GeGLU, gate and up fused in
    ffn_gate_up_exps on even layers, split ffn_gate_exps / ffn_up_exps on
    odd ones; ffn_down_exps with a per-expert ffn_down_exps.scale;
  - out = post_ffw_norm(post_ffw_norm_1(dense) + post_ffw_norm_2(experts)).

Needs gguf-py (the reference's, on PYTHONPATH) and Debian's python3-numpy.
Usage: make_gemma4_moe.py SOURCE.gguf OUT.gguf SEED
"""
import sys

import numpy as np
import gguf

N_EXPERT, N_USED, FF_EXP = 4, 2, 32
ROUTER_SCALE = 2.0


def copy_fields(reader, writer):
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), vtype, sub)


def main():
    src, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = np.random.default_rng(seed)
    reader = gguf.GGUFReader(src)
    arch = "gemma4"
    n_layer = int(reader.fields[f"{arch}.block_count"].contents())
    d = int(reader.fields[f"{arch}.embedding_length"].contents())
    writer = gguf.GGUFWriter(out, arch)
    copy_fields(reader, writer)
    writer.add_uint32(f"{arch}.expert_count", N_EXPERT)
    writer.add_uint32(f"{arch}.expert_used_count", N_USED)
    writer.add_uint32(f"{arch}.expert_feed_forward_length", FF_EXP)
    for t in reader.tensors:
        writer.add_tensor(t.name, np.array(t.data, dtype=np.float32))

    def f32(*shape, scale=1.0, mean=0.0):
        return (mean + scale * rng.standard_normal(shape)).astype(np.float32)

    for il in range(n_layer):
        b = f"blk.{il}."
        writer.add_tensor(b + "ffn_gate_inp.weight", f32(N_EXPERT, d, scale=ROUTER_SCALE))
        writer.add_tensor(b + "ffn_gate_inp.scale", f32(d, scale=0.2, mean=1.0))
        for norm in ("pre_ffw_norm_2", "post_ffw_norm_1", "post_ffw_norm_2"):
            writer.add_tensor(b + norm + ".weight", f32(d, scale=0.1, mean=1.0))
        if il % 2 == 0:
            writer.add_tensor(b + "ffn_gate_up_exps.weight", f32(N_EXPERT, 2 * FF_EXP, d, scale=0.3))
        else:
            writer.add_tensor(b + "ffn_gate_exps.weight", f32(N_EXPERT, FF_EXP, d, scale=0.3))
            writer.add_tensor(b + "ffn_up_exps.weight", f32(N_EXPERT, FF_EXP, d, scale=0.3))
        writer.add_tensor(b + "ffn_down_exps.weight", f32(N_EXPERT, d, FF_EXP, scale=0.3))
        writer.add_tensor(b + "ffn_down_exps.scale", f32(N_EXPERT, scale=0.3, mean=1.0))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
