#!/usr/bin/env bash
# cortexd's engine against llama.cpp on the same GGUF files, the three
# figures the model issues set targets for: prefill of 512 tokens, decode at
# batch 1, and decode of 16 sequences at once. For each file, back to back:
#   cortex bench --prompt-tokens 512 --decode-tokens N --batches 1,16 --context 128
#   llama-bench -p 512 -n N -t T -fa 0           (pp512, tgN)
#   llama-batched-bench -npp 128 -ntg N -npl 16  (S_TG: decode tokens/s of 16 sequences)
# and prints one table with the ratios (ours / llama.cpp) and our decode's
# weight-read efficiency (tokens/s x bytes read per token / measured bandwidth;
# a mixture of experts counts only the experts a token runs).
#
#   bench/vs_llama.sh FILE.gguf [FILE.gguf...]
#   bench/vs_llama.sh --shape qwen3-30b-a3b --type q4_k_m   (make-model's file, made if missing)
#
# Run it on a quiet machine: nothing else running, builds and soaks included.
# Environment: LLAMA_CPP_BIN (folder of llama-bench and llama-batched-bench;
# required), CORTEX_BIN_DIR (default build/bin), THREADS (2), DECODE_TOKENS
# (32), MODELS_DIR (make-model's files, default ${TMPDIR:-/tmp}/cortex-big-models),
# LLAMA_BENCH_REPS (2).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CORTEX_BIN_DIR:-$root/build/bin}"
threads="${THREADS:-2}"
n_decode="${DECODE_TOKENS:-32}"
reps="${LLAMA_BENCH_REPS:-2}"
models_dir="${MODELS_DIR:-${TMPDIR:-/tmp}/cortex-big-models}"
py=/usr/bin/python3
[ -n "${LLAMA_CPP_BIN:-}" ] || { echo "vs_llama: set LLAMA_CPP_BIN to the folder of llama-bench (../shared/docs/reference.md builds it)" >&2; exit 2; }
for tool in llama-bench llama-batched-bench; do
  [ -x "$LLAMA_CPP_BIN/$tool" ] || { echo "vs_llama: $LLAMA_CPP_BIN/$tool not found" >&2; exit 2; }
done
[ -x "$bin/cortex" ] || { echo "vs_llama: $bin/cortex not found (scripts/build, or set CORTEX_BIN_DIR)" >&2; exit 2; }

files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shape="$2"; shift 2 ;;
    --type) type="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) files+=("$1"); shift ;;
  esac
done
if [ -n "${shape:-}" ]; then
  f="$models_dir/$shape-${type:-q4_k_m}.gguf"
  mkdir -p "$models_dir"
  if [ ! -f "$f" ]; then
    echo "== make-model $shape ${type:-q4_k_m} -> $f" >&2
    (cd "$root" && "$bin/cortex" make-model --shape "$shape" --type "${type:-q4_k_m}" --out "$f" --threads "$threads")
  fi
  files+=("$f")
fi
[ ${#files[@]} -gt 0 ] || { echo "vs_llama: no model file (FILE.gguf or --shape NAME --type TYPE)" >&2; exit 2; }

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
i=0
for f in "${files[@]}"; do
  echo "== cortex bench $f" >&2
  "$bin/cortex" bench --model "$f" --threads "$threads" --prompt-tokens 512 --decode-tokens "$n_decode" --batches 1,16 \
    --context 128 --json >"$out/cortex-$i.json"
  echo "== llama-bench $f" >&2
  "$LLAMA_CPP_BIN/llama-bench" -m "$f" -p 512 -n "$n_decode" -t "$threads" -r "$reps" -fa 0 -o json >"$out/llama-$i.json" 2>"$out/llama-$i.log" ||
    { echo "vs_llama: llama-bench failed on $f:" >&2; tail -5 "$out/llama-$i.log" >&2; echo '[]' >"$out/llama-$i.json"; }
  echo "== llama-batched-bench $f" >&2
  "$LLAMA_CPP_BIN/llama-batched-bench" -m "$f" -npp 128 -ntg "$n_decode" -npl 16 -t "$threads" -fa off -c 4096 \
    --output-format jsonl >"$out/batched-$i.jsonl" 2>"$out/batched-$i.log" ||
    { echo "vs_llama: llama-batched-bench failed on $f:" >&2; tail -5 "$out/batched-$i.log" >&2; : >"$out/batched-$i.jsonl"; }
  echo "$f" >"$out/name-$i"
  i=$((i + 1))
done

"$py" - "$out" "$i" <<'PY'
import json, os, sys
out, n = sys.argv[1], int(sys.argv[2])
def ratio(a, b):
    return "%.2fx" % (a / b) if a and b else "-"
print("| file | type | prefill-512 ours / llama.cpp | decode b1 ours / llama.cpp (our efficiency) | decode b16 ours / llama.cpp S_TG |")
print("|---|---|---|---|---|")
for i in range(n):
    c = json.load(open(os.path.join(out, "cortex-%d.json" % i)))
    name = open(os.path.join(out, "name-%d" % i)).read().strip()
    pp = tg = None
    for r in json.load(open(os.path.join(out, "llama-%d.json" % i))):
        if r.get("n_prompt") == 512 and r.get("n_gen") == 0: pp = r["avg_ts"]
        if r.get("n_prompt") == 0 and r.get("n_gen", 0) > 0: tg = r["avg_ts"]
    stg = None
    for line in open(os.path.join(out, "batched-%d.jsonl" % i)):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            if "speed_tg" in r: stg = r["speed_tg"]
    d = {x["batch"]: x for x in c["decode"]}
    b1, b16 = d.get(1, {}), d.get(16, {})
    fmt = lambda v: "%.1f" % v if v else "-"
    print("| %s | %s | %s / %s = %s | %s / %s = %s (%.0f%%) | %s / %s = %s |" % (
        os.path.basename(name), c["quant"], fmt(c["prefill_tps"]), fmt(pp), ratio(c["prefill_tps"], pp),
        fmt(b1.get("tps")), fmt(tg), ratio(b1.get("tps"), tg), 100 * b1.get("efficiency", 0),
        fmt(b16.get("tps")), fmt(stg), ratio(b16.get("tps"), stg)))
PY
