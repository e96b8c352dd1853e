# Sourced by bench/load/compare_*.sh (after `set -euo pipefail`, with
# usage_lines = the last line of the caller's header comment): prints that
# header for -h, reads MODEL [streams=16] [prompt=128] [output=64] into
# model/streams/prompt/output, checks the model and the binaries (bin:
# CORTEX_BIN_DIR, default build/bin of this checkout), and defines
# runtime_opts (THREADS, KV_MEMORY_MB, MAX_BATCH_TOKENS, MAX_RUNNING),
# out_dir (OUT_DIR or a kept temporary directory), free_port,
# stop_daemon, which stops $daemon_pid (also on exit), and compare_rounds.

usage() { sed -n "2,${usage_lines}p" "$0" | sed 's/^# \{0,1\}//'; }
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
out_dir=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/cortex_load.XXXXXX")}
mkdir -p "$out_dir"

# A free loopback port: bind port 0, read what the kernel chose, release it.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

daemon_pid=""
stop_daemon() {
  if [[ -n "$daemon_pid" ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  daemon_pid=""
}
trap stop_daemon EXIT INT TERM

# compare_rounds A B TARGET: ROUNDS (default 2) rounds of the caller's
# `run_mode MODE JSON_OUT` for modes A and B, the order alternating (A first
# in odd rounds) so a drift in the machine's load favours neither; then the
# summary of A / B against TARGET, and exit 1 if the caller set $failed.
compare_rounds() {
  local a=$1 b=$2 target=$3 pairs=() i
  for ((i = 1; i <= ${ROUNDS:-2}; i++)); do
    if ((i % 2)); then
      run_mode "$a" "$out_dir/${a}_$i.json"; run_mode "$b" "$out_dir/${b}_$i.json"
    else
      run_mode "$b" "$out_dir/${b}_$i.json"; run_mode "$a" "$out_dir/${a}_$i.json"
    fi
    pairs+=("$out_dir/${a}_$i.json" "$out_dir/${b}_$i.json")
  done
  echo "== $a / $b (JSON in $out_dir)"
  python3 "$here/compare_summary.py" --target "$target" "${pairs[@]}"
  [[ -z "${failed:-}" ]] || { echo "compare: some requests failed (see above)" >&2; exit 1; }
}
