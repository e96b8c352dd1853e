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

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  usage
  [[ $# -ge 1 ]] && exit 0 || exit 2
fi

model=$1
streams=${2:-16}
prompt=${3:-128}
output=${4:-64}
here=$(cd "$(dirname "$0")" && pwd)
bin=${CORTEX_BIN_DIR:-$here/../../build/bin}
for exe in cortexd cortex_load; do
  [[ -x "$bin/$exe" ]] || { echo "compare: $bin/$exe not found (build it, or set CORTEX_BIN_DIR)" >&2; exit 2; }
done
[[ -r "$model" ]] || { echo "compare: cannot read model '$model'" >&2; exit 2; }

runtime_opts=(--threads "${THREADS:-0}" --kv-memory-mb "${KV_MEMORY_MB:-1024}"
              --max-batch-tokens "${MAX_BATCH_TOKENS:-512}" --max-running "${MAX_RUNNING:-64}")
load_opts=(--streams "$streams" --requests "$streams" --prompt-tokens "$prompt" --output-tokens "$output"
           --warmup "${WARMUP:-0}" --seed "${SEED:-1}")
out_dir=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/cortex_load.XXXXXX")}
mkdir -p "$out_dir"

# A free loopback port: bind port 0, read what the kernel chose, release it.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
endpoint="tcp://127.0.0.1:$port"

daemon_pid=""
stop_daemon() {
  if [[ -n "$daemon_pid" ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  daemon_pid=""
}
trap stop_daemon EXIT INT TERM

run_wire() {  # $1: JSON output
  echo "== wire: cortexd on $endpoint (log: $out_dir/cortexd.log)"
  "$bin/cortexd" --model "$model" --endpoint "$endpoint" --log-level warn "${runtime_opts[@]}" \
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
