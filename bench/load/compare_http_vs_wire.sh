#!/usr/bin/env bash
# What HTTP costs beside ZeroMQ: starts one cortexd (ZeroMQ and HTTP on free
# loopback ports), then runs the same load over HTTP and over the wire
# alternately against it, and prints the tok/s of every run and HTTP / wire
# per round (issue 9's target: HTTP costs under 3% of tok/s at 16 streams,
# ratio >= 0.97).
#
#   bench/load/compare_http_vs_wire.sh MODEL [streams=16] [prompt=128] [output=64]
#
# Environment: CORTEX_BIN_DIR (default: build/bin of this checkout),
# THREADS, KV_MEMORY_MB, MAX_BATCH_TOKENS, MAX_RUNNING (cortexd's runtime
# options), ROUNDS (default 2; each round runs both modes, the order
# alternates: HTTP first, then wire first, ...), WARMUP_REQUESTS (an
# unmeasured wire load first, default = streams), SEED (default 1; run k
# uses SEED + k, so the one server's prefix cache never serves a prompt
# from an earlier run), HTTP_LOGPROBS (non-empty: the HTTP runs ask
# logprobs, so their TTFT and ITL count every token, at a small server
# cost; see cortex_load --help), OUT_DIR (JSON results; default: a
# temporary directory, kept). `uptime` is printed after every run.
set -euo pipefail

usage_lines=19
source "$(dirname "$0")/compare_common.sh"

load_opts=(--streams "$streams" --requests "$streams" --prompt-tokens "$prompt" --output-tokens "$output")
endpoint="tcp://127.0.0.1:$(free_port)"
http_addr="127.0.0.1:$(free_port)"

echo "== cortexd: ZeroMQ $endpoint, HTTP $http_addr (log: $out_dir/cortexd.log)"
"$bin/cortexd" --model "$model" --endpoint "$endpoint" --http "$http_addr" --log-level warn "${runtime_opts[@]}" \
  >>"$out_dir/cortexd.log" 2>&1 &
daemon_pid=$!

failed=""
run=0
run_mode() {  # $1: http or wire, $2: JSON output
  run=$((run + 1))
  local target=(--endpoint "$endpoint")
  [[ $1 == http ]] && target=(--http "http://$http_addr" --model "$model")
  [[ $1 == http && -n "${HTTP_LOGPROBS:-}" ]] && target+=(--http-logprobs)
  echo "== run $run: $1 (seed $((${SEED:-1} + run)))"
  # cortex_load waits until the server is ready itself (--ready-timeout).
  "$bin/cortex_load" "${target[@]}" --server-pid "$daemon_pid" "${load_opts[@]}" --seed "$((${SEED:-1} + run))" \
    --quiet --json "$2" || failed=1
  echo "uptime:$(uptime)"
  # A pause before the next run's connections, so cortexd's ZeroMQ gateway
  # has seen the previous ones close (it ties peers to socket fds and learns
  # of closed ones asynchronously). Once, on a loaded machine, a wire run
  # right after another had all its requests end client_gone and timed out.
  sleep "${PAUSE_S:-2}"
  [[ -s "$2" ]] || { echo "compare: no $1 results (see above; cortexd log: $out_dir/cortexd.log)" >&2; exit 1; }
}

warmup=${WARMUP_REQUESTS:-$streams}
if ((warmup > 0)); then
  echo "== warmup: $warmup requests over the wire (not measured)"
  "$bin/cortex_load" --endpoint "$endpoint" --streams "$streams" --requests "$warmup" --prompt-tokens "$prompt" \
    --output-tokens "$output" --seed "$((${SEED:-1} + 1000))" --quiet >/dev/null || failed=1
fi

compare_rounds http wire 0.97
