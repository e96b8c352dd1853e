#!/usr/bin/env bash
# Decode at real 7-8B sizes, where the weights are far larger than any cache:
# makes the synthetic files if missing (cortex make-model, random weights),
# then for each type runs, back to back, `cortex bench` (decode batch 1,
# % of the measured DRAM bandwidth, resident memory after load) and
# llama.cpp's `llama-bench -p 0 -n 32`, and prints one table.
#
#   bench/big_models.sh [SHAPE=llama-3.1-8b] [TYPES=q4_0,q4_k_m,q8_0]
#
# Environment: MODELS_DIR (where the .gguf files are made and kept, default
# ${TMPDIR:-/tmp}/cortex-big-models; an 8B Q8_0 file is 8 GiB, keep it out
# of the checkout), LLAMA_CPP_BIN (folder of llama.cpp's llama-bench; unset:
# the llama.cpp columns are skipped), CORTEX_BIN_DIR (default build/bin of
# this checkout), THREADS (default 2), DECODE_TOKENS (default 32),
# REPEAT (cortex bench repetitions, default 2), LLAMA_BENCH_REPS (default 3),
# VOCAB_DIR (make-model --vocab-dir).
set -euo pipefail

shape="${1:-llama-3.1-8b}"
IFS=',' read -r -a types <<<"${2:-q4_0,q4_k_m,q8_0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CORTEX_BIN_DIR:-$root/build/bin}"
models_dir="${MODELS_DIR:-${TMPDIR:-/tmp}/cortex-big-models}"
threads="${THREADS:-2}"
n_decode="${DECODE_TOKENS:-32}"
reps="${LLAMA_BENCH_REPS:-3}"
py=/usr/bin/python3

[ -x "$bin/cortex" ] || { echo "big_models: $bin/cortex not found (scripts/build, or set CORTEX_BIN_DIR)" >&2; exit 2; }
llama_bench=""
if [ -n "${LLAMA_CPP_BIN:-}" ]; then
  llama_bench="$LLAMA_CPP_BIN/llama-bench"
  [ -x "$llama_bench" ] || { echo "big_models: $llama_bench not found (LLAMA_CPP_BIN)" >&2; exit 2; }
fi
mkdir -p "$models_dir"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

for t in "${types[@]}"; do
  f="$models_dir/$shape-$t.gguf"
  if [ ! -f "$f" ]; then
    echo "== make-model $shape $t -> $f" >&2
    vocab=()
    [ -n "${VOCAB_DIR:-}" ] && vocab=(--vocab-dir "$VOCAB_DIR")
    (cd "$root" && "$bin/cortex" make-model --shape "$shape" --type "$t" --out "$f" --threads "$threads" "${vocab[@]}")
  fi
done

# One type after the other, ours then llama.cpp's, so both see the same load.
for t in "${types[@]}"; do
  f="$models_dir/$shape-$t.gguf"
  echo "== cortex bench $t" >&2
  "$bin/cortex" bench --model "$f" --threads "$threads" --prompt-tokens 16 --decode-tokens "$n_decode" --batches 1 \
    --repeat "${REPEAT:-2}" --json >"$out/cortex-$t.json"
  if [ -n "$llama_bench" ]; then
    echo "== llama-bench $t" >&2
    "$llama_bench" -m "$f" -p 0 -n "$n_decode" -t "$threads" -r "$reps" --progress -o json >"$out/llama-$t.json" 2>"$out/llama-$t.log" ||
      { echo "big_models: llama-bench failed on $f:" >&2; tail -5 "$out/llama-$t.log" >&2; echo '[]' >"$out/llama-$t.json"; }
  fi
done

"$py" - "$out" "$shape" "${types[@]}" <<'EOF'
import json, os, sys
out, shape, types = sys.argv[1], sys.argv[2], sys.argv[3:]
gib = 1 << 30
print(f"{shape}, decode batch 1")
print("| type | file GiB | cortex tok/s | % of bandwidth | llama.cpp tok/s (best) | ratio | RSS GiB | file + K/V GiB | RSS / (file + K/V) |")
print("|---|---|---|---|---|---|---|---|---|")
for t in types:
    c = json.load(open(f"{out}/cortex-{t}.json"))
    d1 = next(d for d in c["decode"] if d["batch"] == 1)
    llama = "-"; ratio = "-"
    p = f"{out}/llama-{t}.json"
    if os.path.exists(p):
        runs = [r for r in json.load(open(p)) if r.get("n_gen", 0) > 0]
        if runs:
            # Best repetition, as cortex bench reports its best: on a shared
            # machine the best is the least disturbed run of each.
            ts = max(runs[0].get("samples_ts") or [runs[0]["avg_ts"]])
            llama = f"{ts:.2f} (mean {runs[0]['avg_ts']:.2f})"; ratio = f"{d1['tps'] / ts:.2f}x"
    base = c["file_bytes"] + c["kv_bytes"]
    print(f"| {t} | {c['file_bytes'] / gib:.2f} | {d1['tps']:.2f} | {100 * d1['efficiency']:.0f}% of {c['bandwidth_gbs']:.1f} GB/s "
          f"| {llama} | {ratio} | {c['rss_bytes'] / gib:.2f} | {base / gib:.2f} | {c['rss_bytes'] / base:.2f} |")
EOF
