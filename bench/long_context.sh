#!/usr/bin/env bash
# Decode speed of one sequence at long context, ours against llama.cpp, same
# GGUF file, f16 K/V on both sides, back to back on this machine (issue 12:
# decode at 4096 context >= 1.5x llama.cpp's tok/s). Prints both figures,
# their ratio and the load average before and after.
#
#   LLAMA_CPP_BIN=DIR bench/long_context.sh [MODEL.gguf]
#
# MODEL defaults to a tinyllama-1.1b Q4_0 file written by `cortex make-model`
# (seeded random weights) into $TMPDIR when missing. Environment:
# LLAMA_CPP_BIN (llama.cpp's bin dir with llama-batched-bench; without it only
# our side runs), CORTEX_BIN_DIR (default: build/bin of this checkout),
# CONTEXT (prompt tokens before decode, default 4000), DECODE (decode steps
# timed, default 32), THREADS (default 2), KV_TYPE (default f16; llama.cpp's
# -ctk/-ctv get the same), LLAMA_EXTRA (extra llama-batched-bench flags,
# e.g. "-fa").
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CORTEX_BIN_DIR:-$root/build/bin}
model=${1:-${TMPDIR:-/tmp}/cortex-tinyllama-1.1b-q4_0.gguf}
ctx=${CONTEXT:-4000}
ntg=${DECODE:-32}
threads=${THREADS:-2}
kv=${KV_TYPE:-f16}

if [ ! -f "$model" ]; then
  echo "== writing $model (cortex make-model --shape tinyllama-1.1b --type q4_0)"
  "$bin/cortex" make-model --shape tinyllama-1.1b --type q4_0 --out "$model" >/dev/null
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== ours: cortex bench --context $ctx --decode-tokens $ntg --batches 1 --kv-type $kv --threads $threads"
ours_json=$("$bin/cortex" bench --model "$model" --threads "$threads" --prompt-tokens 8 --context "$ctx" \
  --decode-tokens "$ntg" --batches 1 --repeat 1 --kv-type "$kv" --json)
ours=$(printf '%s' "$ours_json" | python3 -c 'import json, sys; print("%.2f" % json.load(sys.stdin)["decode"][0]["tps"])')
echo "ours: decode at context $ctx: $ours tok/s"

if [ -z "${LLAMA_CPP_BIN:-}" ]; then
  echo "LLAMA_CPP_BIN is not set: llama.cpp's side skipped"
  exit 0
fi
n_ctx=$(( (ctx + ntg + 255) / 256 * 256 ))
echo "== llama.cpp: llama-batched-bench -npp $ctx -ntg $ntg -npl 1 -c $n_ctx -ctk $kv -ctv $kv -t $threads ${LLAMA_EXTRA:-}"
# shellcheck disable=SC2086
llama_out=$("$LLAMA_CPP_BIN/llama-batched-bench" -m "$model" -c "$n_ctx" -b 2048 -ub 512 -npp "$ctx" -ntg "$ntg" -npl 1 \
  -ctk "$kv" -ctv "$kv" -t "$threads" ${LLAMA_EXTRA:-} 2>/dev/null)
printf '%s\n' "$llama_out" | grep '^|' || true
# The result row: | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |
theirs=$(printf '%s\n' "$llama_out" | awk -F'|' -v pp="$ctx" '$2 + 0 == pp { gsub(/ /, "", $9); print $9 }' | tail -1)
if [ -z "$theirs" ]; then
  echo "could not read llama-batched-bench's S_TG figure" >&2
  exit 1
fi
echo "llama.cpp: decode at context $ctx: $theirs tok/s"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 -c "import sys; print('ratio ours / llama.cpp: %.2fx' % (float(sys.argv[1]) / float(sys.argv[2])))" "$ours" "$theirs"
