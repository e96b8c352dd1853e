#!/usr/bin/env bash
# Makes tests/data/arch/gemma4-moe-f32.{gguf,json}: a tiny Gemma 4
# mixture-of-experts file (make_gemma4_moe.py) and llama.cpp's logits for it
# (llama_logits.cpp, linked against the reference), in the format of
# ../shared/golden/arch with the prompts of its gemma4-f32.json.
#
# Usage: LLAMA_CPP_DIR=<llama.cpp checkout with build/bin> scripts/golden/make_gemma4_moe.sh [SEED]
# The reference is today's llama.cpp built as ../shared/docs/reference.md
# says (outside this repository).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${LLAMA_CPP_DIR:?set LLAMA_CPP_DIR to the reference llama.cpp checkout (with build/bin)}"
SEED="${1:-1}"
SHARED=../shared/golden/arch
OUT=tests/data/arch
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

g++ -O2 -std=c++17 scripts/golden/llama_logits.cpp -I"$LLAMA_CPP_DIR/include" -I"$LLAMA_CPP_DIR/ggml/include" \
  -L"$LLAMA_CPP_DIR/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMA_CPP_DIR/build/bin" -o "$TMP/llama_logits"
PYTHONPATH="$LLAMA_CPP_DIR/gguf-py" /usr/bin/python3 scripts/golden/make_gemma4_moe.py \
  "$SHARED/gemma4-f32.gguf" "$OUT/gemma4-moe-f32.gguf" "$SEED"
/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
json.dump({"cases": [{"tokens": c["tokens"]} for c in j["cases"]]}, open(sys.argv[2], "w"))
' "$SHARED/gemma4-f32.json" "$TMP/prompts.json"
"$TMP/llama_logits" "$OUT/gemma4-moe-f32.gguf" "$TMP/prompts.json" 16 >"$TMP/logits.json" 2>"$TMP/llama.log"
COMMIT=$(git -C "$LLAMA_CPP_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)
/usr/bin/python3 -c '
import json, sys
base = json.load(open(sys.argv[1]))
out = json.load(open(sys.argv[2]))
head = {
  "model": "gemma4-moe-f32.gguf", "arch": "gemma4", "weights": "F32", "tensor_types": ["F32"],
  "made_with": "llama.cpp " + sys.argv[3] + " through libllama (scripts/golden/llama_logits.cpp): CPU, 2 threads, "
               "F32 KV cache, flash attention off, full-size SWA cache, n_ctx 1024, prompt as one batch, greedy",
  "features": base["features"] + [
    "experts in every layer beside the dense FFN: dense on ffn_norm then post_ffw_norm_1; experts on pre_ffw_norm_2, "
    "GeGLU, post_ffw_norm_2; the sum through post_ffw_norm",
    "router: softmax of ffn_gate_inp . (rmsnorm(h) / sqrt(n_embd) * ffn_gate_inp.scale), top-k renormalised",
    "ffn_gate_up_exps fused on even layers, ffn_gate_exps + ffn_up_exps on odd ones",
    "ffn_down_exps.scale: each expert output times its scale"],
  "shape": dict(base["shape"], n_expert=4, n_expert_used=2, ff_exp=32, seed=int(sys.argv[4])),
  "atol": base["atol"], "rtol": base["rtol"], "n_vocab": out["n_vocab"], "n_gen": out["n_gen"], "kv_type": "f32",
  "min_greedy_gap": round(out["min_greedy_gap"], 6), "min_router_margin": round(out["min_router_margin"], 6),
  "min_router_margin_unit": "router logits (n_used-th minus the next)",
}
head["cases"] = out["cases"]
json.dump(head, open(sys.argv[5], "w"), separators=(",", ":"))
' "$SHARED/gemma4-f32.json" "$TMP/logits.json" "$COMMIT" "$SEED" "$OUT/gemma4-moe-f32.json"
ls -l "$OUT"/gemma4-moe-f32.*
