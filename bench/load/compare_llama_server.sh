#!/usr/bin/env bash
# cortexd against llama.cpp's llama-server, timed by the same client code
# (cortex_load's HTTP client: cortexd's streamed /v1/completions, llama-server's
# streamed /completion) on the same GGUF file and the same prompts (token ids):
# N streams all sent at once (issue 12: 16 streams, ~60-token prompts, 32 new
# tokens; done when throughput >= 3x, TTFT p50 <= 1/5 and ITL p99 <= 1/2 of
# llama-server's). Each round runs llama-server (-np STREAMS -cb), then one
# cortexd per --itl-target-ms setting (ITL_TARGETS), and prints every run's
# tok/s, TTFT and ITL p50/p99 and the ratios to that round's llama-server.
#
#   bench/load/compare_llama_server.sh MODEL [streams=16] [prompt=60] [output=32]
#
# MODEL is made when missing (cortex make-model --shape tinyllama-1.1b --type
# q4_0, random weights of the real size). Environment: LLAMA_CPP_BIN (required:
# the directory holding llama.cpp's llama-server), CORTEX_BIN_DIR (default:
# build/bin of this checkout), THREADS (both servers, default 2), ITL_TARGETS
# (cortexd --itl-target-ms values, default "auto"; e.g. "auto 100 200 off"),
# ROUNDS (default 1), WARMUP_REQUESTS (an unmeasured load before each
# measured one, default = streams), SEED (default 1), OUT_DIR (JSON and logs;
# default: a temporary directory, kept), KV_MEMORY_MB, MAX_BATCH_TOKENS,
# MAX_RUNNING (cortexd's). cortexd's runs ask logprobs so every token is
# counted where it arrives; llama-server's count its tokens_predicted.
set -euo pipefail

usage_lines=22
if [[ $# -ge 1 && "$1" != -* && ! -e "$1" ]]; then  # make the model first: compare_common checks it is there
  mk_bin=${CORTEX_BIN_DIR:-$(cd "$(dirname "$0")" && pwd)/../../build/bin}
  echo "== making $1 (tinyllama-1.1b shape, q4_0, random weights)"
  "$mk_bin/cortex" make-model --shape tinyllama-1.1b --type q4_0 --out "$1"
fi
[[ $# -lt 1 ]] || set -- "$1" "${2:-16}" "${3:-60}" "${4:-32}"  # this comparison's defaults
source "$(dirname "$0")/compare_common.sh"

llama_bin=${LLAMA_CPP_BIN:-}
[[ -n "$llama_bin" && -x "$llama_bin/llama-server" ]] || {
  echo "compare: set LLAMA_CPP_BIN to the directory holding llama.cpp's llama-server" >&2
  exit 2
}
threads=${THREADS:-2}
runtime_opts=(--threads "$threads" --kv-memory-mb "${KV_MEMORY_MB:-1024}"
              --max-batch-tokens "${MAX_BATCH_TOKENS:-512}" --max-running "${MAX_RUNNING:-64}")
load_opts=(--streams "$streams" --requests "$streams" --prompt-tokens "$prompt" --output-tokens "$output" --model "$model"
           --warmup "${WARMUP_REQUESTS:-$streams}" --quiet)
# Per slot: the prompt, the output and room to spare (llama-server splits -c over its -np slots).
ctx_per_slot=$(( (prompt + output + 64 + 15) / 16 * 16 ))

failed=""
run_llama() {  # $1: JSON output, $2: seed
  local port
  port=$(free_port)
  echo "== llama-server -np $streams -cb -t $threads (log: $out_dir/llama-server.log)"
  "$llama_bin/llama-server" -m "$model" -np "$streams" -cb -t "$threads" -c $((ctx_per_slot * streams)) \
    --host 127.0.0.1 --port "$port" >>"$out_dir/llama-server.log" 2>&1 &
  daemon_pid=$!
  "$bin/cortex_load" --llama-server "http://127.0.0.1:$port" --server-pid "$daemon_pid" "${load_opts[@]}" --seed "$2" \
    --json "$1" || failed=1
  stop_daemon
  echo "uptime:$(uptime)"
}

run_cortexd() {  # $1: JSON output, $2: seed, $3: --itl-target-ms
  local port
  port=$(free_port)
  echo "== cortexd --itl-target-ms $3 (log: $out_dir/cortexd.log)"
  "$bin/cortexd" --model "$model" --endpoint "ipc://$out_dir/cortexd.sock" --http "127.0.0.1:$port" --log-level warn \
    --itl-target-ms "$3" "${runtime_opts[@]}" >>"$out_dir/cortexd.log" 2>&1 &
  daemon_pid=$!
  "$bin/cortex_load" --http "http://127.0.0.1:$port" --http-logprobs --server-pid "$daemon_pid" "${load_opts[@]}" \
    --seed "$2" --json "$1" || failed=1
  stop_daemon
  echo "uptime:$(uptime)"
}

targets=(${ITL_TARGETS:-auto})
seed=${SEED:-1}
for ((round = 1; round <= ${ROUNDS:-1}; round++)); do
  files=("$out_dir/llama_$round.json")
  run_llama "${files[0]}" "$seed"
  [[ -s "${files[0]}" ]] || { echo "compare: no llama-server results (log: $out_dir/llama-server.log)" >&2; exit 1; }
  for t in "${targets[@]}"; do
    f="$out_dir/cortexd_${t}_$round.json"
    run_cortexd "$f" "$seed" "$t"
    [[ -s "$f" ]] || { echo "compare: no cortexd results (log: $out_dir/cortexd.log)" >&2; exit 1; }
    files+=("$f")
  done
  echo "== round $round (JSON in $out_dir)"
  python3 "$here/compare_llama_summary.py" "${files[@]}"
done
[[ -z "$failed" ]] || { echo "compare: some requests failed (see above)" >&2; exit 1; }
