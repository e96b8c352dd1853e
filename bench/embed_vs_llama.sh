#!/usr/bin/env bash
# Encoder embedding throughput, ours against llama.cpp's llama-embedding on
# the same GGUF file, back to back: N_INPUTS inputs of N_TOKENS tokens each
# ([CLS] + words + [SEP], every word one WordPiece token), THREADS threads.
#   cortex embed --input-file F --threads T --batch-tokens B --timing
#   llama-embedding -f F -t T -b B -ub B --embd-output-format array, at each of
#     its settings LLAMA_SETTINGS (default: "-c N_INPUTS*N_TOKENS -fa off", "-c B
#     -fa off", "-c B -fa on"; a context of every input makes its masked
#     attention span all of them, which is slower, not fairer)
# Prints inputs/s for each, best of REPS runs (llama.cpp's at its best setting,
# which is named), model load and tokenization
# excluded on both sides (ours: cortex embed --timing; llama.cpp's: its wall
# time after its log's first batch_decode stamp), and the ratio. The issue's figure: bge-small,
# 64 inputs of 128 tokens, 2 threads.
#
#   bench/embed_vs_llama.sh FILE.gguf
#   bench/embed_vs_llama.sh --shape bge-small [--type f32|f16|q8_0]  (make-model's file, made if missing)
#
# Run it on a quiet machine: nothing else running, builds and soaks included.
# Environment: LLAMA_CPP_BIN (folder of llama-embedding; required),
# CORTEX_BIN_DIR (default build/bin), THREADS (2), N_INPUTS (64), N_TOKENS
# (128), BATCH_TOKENS (2048), REPS (3), MODELS_DIR (make-model's files,
# default ${TMPDIR:-/tmp}/cortex-embed-models).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CORTEX_BIN_DIR:-$root/build/bin}"
threads="${THREADS:-2}"
n_inputs="${N_INPUTS:-64}"
n_tokens="${N_TOKENS:-128}"
batch="${BATCH_TOKENS:-2048}"
reps="${REPS:-3}"
models_dir="${MODELS_DIR:-${TMPDIR:-/tmp}/cortex-embed-models}"
[ -n "${LLAMA_CPP_BIN:-}" ] || { echo "embed_vs_llama: set LLAMA_CPP_BIN to the folder of llama-embedding" >&2; exit 2; }
[ -x "$LLAMA_CPP_BIN/llama-embedding" ] || { echo "embed_vs_llama: $LLAMA_CPP_BIN/llama-embedding not found" >&2; exit 2; }
[ -x "$bin/cortex" ] || { echo "embed_vs_llama: $bin/cortex not found (scripts/build, or set CORTEX_BIN_DIR)" >&2; exit 2; }

file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shape="$2"; shift 2 ;;
    --type) type="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) file="$1"; shift ;;
  esac
done
if [ -n "${shape:-}" ]; then
  file="$models_dir/$shape-${type:-f16}.gguf"
  mkdir -p "$models_dir"
  if [ ! -f "$file" ]; then
    echo "== make-model $shape ${type:-f16} -> $file" >&2
    (cd "$root" && "$bin/cortex" make-model --shape "$shape" --type "${type:-f16}" --out "$file" --threads "$threads")
  fi
fi
[ -n "$file" ] || { echo "embed_vs_llama: no model file (FILE.gguf or --shape NAME)" >&2; exit 2; }

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# Inputs: common English words, each one WordPiece token of the bert-bge
# vocabulary, rotated per line so that no two inputs are equal.
python3 - "$n_inputs" "$((n_tokens - 2))" >"$out/inputs.txt" <<'PY'
import sys
words = ("the of and to in was he is for on as with by it his at from that her an were are which this be "
         "or has had first one their its new after who they have two she been other when there all during into "
         "school time may years more most only over city some world would where later up such used many can "
         "state about national out known university united then made").split()
n, k = int(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    print(" ".join(words[(i * 7 + j) % len(words)] for j in range(k)))
PY
# Every input must be exactly n_tokens tokens for the figure to mean what it says.
"$bin/cortex" embed --model "$file" --input-file "$out/inputs.txt" --threads "$threads" --json 2>/dev/null |
  python3 -c "
import json, sys
n = [json.loads(l)['prompt_tokens'] for l in sys.stdin]
bad = [x for x in n if x != $n_tokens]
sys.exit('embed_vs_llama: inputs tokenize to %s tokens, not $n_tokens' % sorted(set(bad)) if bad else 0)"

best_ours=0
for r in $(seq "$reps"); do
  "$bin/cortex" embed --model "$file" --input-file "$out/inputs.txt" --threads "$threads" --batch-tokens "$batch" \
    --timing >/dev/null 2>"$out/ours.log"
  ips=$(sed -n 's/.*: \([0-9.]*\) inputs\/s.*/\1/p' "$out/ours.log")
  best_ours=$(python3 -c "print(max($best_ours, $ips))")
done
best_llama=0
best_setting=""
ctx=$((n_inputs * n_tokens))
settings=()
if [ -n "${LLAMA_SETTINGS:-}" ]; then
  IFS=';' read -r -a settings <<<"$LLAMA_SETTINGS"
else
  settings=("-c $ctx -fa off" "-c $batch -fa off" "-c $batch -fa on")
fi
for setting in "${settings[@]}"; do
for r in $(seq "$reps"); do
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086  # the setting is several options
  "$LLAMA_CPP_BIN/llama-embedding" -m "$file" -f "$out/inputs.txt" -t "$threads" -b "$batch" -ub "$batch" $setting \
    --embd-output-format array >/dev/null 2>"$out/llama.log"
  t1=$(date +%s.%N)
  # Its perf counters leave embeddings out (prompt eval time 0), so the
  # forward passes are timed as the process's wall time less the time its
  # log stamps on the first "batch_decode" line (model loaded, inputs
  # tokenized; stamps count from its start): what remains is the passes and
  # printing the vectors.
  s=$(python3 - "$out/llama.log" "$t0" "$t1" <<'PY'
import sys
lines = open(sys.argv[1], errors="replace").read().splitlines()
first = next((l for l in lines if "batch_decode:" in l), None)
if first:
    m, s, ms, us = (int(x) for x in first.split()[0].split("."))  # minutes.seconds.milliseconds.microseconds
    print(float(sys.argv[3]) - float(sys.argv[2]) - (m * 60 + s + ms / 1e3 + us / 1e6))
PY
)
  [ -n "$s" ] || { echo "embed_vs_llama: no batch_decode line in llama-embedding's log:" >&2; tail -5 "$out/llama.log" >&2; exit 1; }
  ips=$(python3 -c "print($n_inputs / $s)")
  echo "embed_vs_llama: llama-embedding $setting: $ips inputs/s" >&2
  if python3 -c "import sys; sys.exit(0 if $ips > $best_llama else 1)"; then
    best_llama=$ips
    best_setting=$setting
  fi
done
done
echo "embed_vs_llama: llama-embedding's best setting: $best_setting" >&2
python3 - "$file" "$best_ours" "$best_llama" "$threads" "$n_inputs" "$n_tokens" <<'PY'
import sys
f, ours, llama, t, n, k = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
print("| file | threads | inputs x tokens | ours inputs/s | llama-embedding inputs/s | ours / llama.cpp |")
print("|---|---|---|---|---|---|")
print("| %s | %s | %s x %s | %.2f | %.2f | %.2fx |" % (f.split("/")[-1], t, n, k, ours, llama, ours / llama if llama else 0))
PY
