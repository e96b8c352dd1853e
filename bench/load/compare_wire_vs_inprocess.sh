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
# both modes), WARMUP (default 0), SEED (default 1), OUT_DIR (JSON results;
# default: a temporary directory, kept and printed).
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

echo "== wire: cortexd on $endpoint (log: $out_dir/cortexd.log)"
"$bin/cortexd" --model "$model" --endpoint "$endpoint" --log-level warn "${runtime_opts[@]}" \
  >"$out_dir/cortexd.log" 2>&1 &
daemon_pid=$!
# cortex_load waits for health `ready` itself (--ready-timeout).
"$bin/cortex_load" --endpoint "$endpoint" "${load_opts[@]}" --json "$out_dir/wire.json" || wire_rc=$?
stop_daemon

echo "== in-process"
"$bin/cortex_load" --in-process --model "$model" "${runtime_opts[@]}" "${load_opts[@]}" \
  --json "$out_dir/inprocess.json" || inproc_rc=$?

python3 - "$out_dir/wire.json" "$out_dir/inprocess.json" <<'EOF'
import json, sys
w, p = (json.load(open(f)) for f in sys.argv[1:3])
rw, rp = w["results"], p["results"]
print("== wire / in-process (results in %s)" % sys.argv[1].rsplit("/", 1)[0])
print("aggregate tok/s   wire %.2f   in-process %.2f   ratio %.3f (target >= 0.95)"
      % (rw["tok_per_s"], rp["tok_per_s"], rw["tok_per_s"] / rp["tok_per_s"] if rp["tok_per_s"] else float("nan")))
for k in ("ttft_ms", "itl_ms"):
    print("%-8s p50/p99   wire %.1f / %.1f   in-process %.1f / %.1f"
          % (k, rw[k]["p50"], rw[k]["p99"], rp[k]["p50"], rp[k]["p99"]))
print("client CPU (wire) %.2f s = %.1f%% of one core" % (rw.get("cpu_s", -1), rw.get("cpu_pct_of_wall", -1)))
print("load average      wire run %s   in-process run %s" % (w["load_average"], p["load_average"]))
EOF
[[ -z "${wire_rc:-}" && -z "${inproc_rc:-}" ]] || { echo "compare: some requests failed (see above)" >&2; exit 1; }
