#!/usr/bin/env bash
# What the gateway costs: runs the same load over the wire (to a cortexd
# started here on a free loopback port) and in-process, back to back with the
# same runtime options, and prints wire tok/s / in-process tok/s (issue 4's
# target: >= 0.95).
#
#   bench/load/compare_wire_vs_inprocess.sh MODEL [streams=16] [prompt=128] [output=64]
#
# Environment: CORTEX_BIN_DIR (default: build/bin of this checkout),
# THREADS, KV_MEMORY_MB, MAX_BATCH_TOKENS, MAX_RUNNING (runtime options for
# both modes), WARMUP (default 0), SEED (default 1), REPEAT (pairs of runs,
# default 1; the order alternates), OUT_DIR (JSON results; default: a
# temporary directory, kept). Also prints CPU per token of both modes.
set -euo pipefail

usage_lines=13
source "$(dirname "$0")/compare_common.sh"

load_opts=(--streams "$streams" --requests "$streams" --prompt-tokens "$prompt" --output-tokens "$output"
           --warmup "${WARMUP:-0}" --seed "${SEED:-1}")
endpoint="tcp://127.0.0.1:$(free_port)"

run_wire() {  # $1: JSON output
  echo "== wire: cortexd on $endpoint (log: $out_dir/cortexd.log)"
  "$bin/cortexd" --model "$model" --endpoint "$endpoint" --http off --log-level warn "${runtime_opts[@]}" \
    >>"$out_dir/cortexd.log" 2>&1 &
  daemon_pid=$!
  # cortex_load waits for health `ready` itself (--ready-timeout).
  "$bin/cortex_load" --endpoint "$endpoint" --server-pid "$daemon_pid" "${load_opts[@]}" --json "$1" || failed=1
  stop_daemon
}
run_inprocess() {  # $1: JSON output
  echo "== in-process"
  "$bin/cortex_load" --in-process --model "$model" "${runtime_opts[@]}" "${load_opts[@]}" --json "$1" || failed=1
}

# Pairs run back to back; the order alternates (wire first, then in-process
# first, ...) so a drift in the machine's load favours neither mode.
failed=""
pairs=()
for ((i = 1; i <= ${REPEAT:-1}; i++)); do
  if ((i % 2)); then
    run_wire "$out_dir/wire_$i.json"; run_inprocess "$out_dir/inprocess_$i.json"
  else
    run_inprocess "$out_dir/inprocess_$i.json"; run_wire "$out_dir/wire_$i.json"
  fi
  for mode in wire inprocess; do
    [[ -s "$out_dir/${mode}_$i.json" ]] ||
      { echo "compare: no $mode results (see above; cortexd log: $out_dir/cortexd.log)" >&2; exit 1; }
  done
  pairs+=("$out_dir/wire_$i.json" "$out_dir/inprocess_$i.json")
done

echo "== wire / in-process (JSON in $out_dir)"
python3 "$here/compare_summary.py" --target 0.95 "${pairs[@]}"
[[ -z "$failed" ]] || { echo "compare: some requests failed (see above)" >&2; exit 1; }
