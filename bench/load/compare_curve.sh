#!/usr/bin/env bash
# What CURVE costs: runs the same wire load against a cortexd started here
# in plaintext and against one started with --curve-secret-key (encryption,
# ZAP admitting the load's client key), alternately, each on a free
# loopback port with the same runtime options and the same keys file
# (--auth; the plaintext runs send the key's secret as `auth`, so both modes
# pay for access control and differ only in CURVE). Prints the tok/s of
# every run and CURVE / plaintext per round (issue 10's target: within 3%
# at 16 streams, ratio >= 0.97). Keys are made here with `cortex keys curve`.
#
#   bench/load/compare_curve.sh MODEL [streams=16] [prompt=128] [output=64]
#
# Environment: CORTEX_BIN_DIR (default: build/bin of this checkout),
# THREADS, KV_MEMORY_MB, MAX_BATCH_TOKENS, MAX_RUNNING (cortexd's runtime
# options), ROUNDS (default 2; each round runs both modes, the order
# alternates: CURVE first, then plaintext first, ...), REQUESTS (measured
# requests per run, default = streams; a tiny model needs many for a window
# of seconds), WARMUP (requests run before each measured window, default =
# streams), SEED (default 1), OUT_DIR
# (JSON results and keys; default: a temporary directory, kept). `uptime` is
# printed after every run.
set -euo pipefail

usage_lines=21
source "$(dirname "$0")/compare_common.sh"
[[ -x "$bin/cortex" ]] || { echo "compare: $bin/cortex not found (build it, or set CORTEX_BIN_DIR)" >&2; exit 2; }

# Keys: the server's pair, the load's client pair, an API secret for the
# plaintext runs, and a keys file with one unlimited tier holding them.
keys="$out_dir/keys"
mkdir -p "$keys"
"$bin/cortex" keys curve --out "$keys/server" --force >/dev/null
"$bin/cortex" keys curve --out "$keys/bench" --force >/dev/null
secret="cs-$(python3 -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("="))')"
secret_sha256=$(printf '%s' "$secret" | sha256sum | cut -d' ' -f1)
printf '{"tiers": {"t": {}}, "keys": [{"id": "bench", "tier": "t", "sha256": "%s", "curve_public": "%s"}]}\n' \
  "$secret_sha256" "$(cat "$keys/bench.pub")" >"$keys/auth.json"

load_opts=(--streams "$streams" --requests "${REQUESTS:-$streams}" --prompt-tokens "$prompt" --output-tokens "$output"
           --warmup "${WARMUP:-$streams}" --seed "${SEED:-1}" --quiet)

failed=""
run_mode() {  # $1: curve or plain, $2: JSON output
  local endpoint="tcp://127.0.0.1:$(free_port)" server_opts=() client_opts=()
  if [[ $1 == curve ]]; then
    server_opts=(--curve-secret-key "$keys/server.key")
    client_opts=(--curve-server-key "$keys/server.pub" --curve-key "$keys/bench")
  else
    client_opts=(--api-key "$secret")
  fi
  echo "== $1: cortexd on $endpoint (log: $out_dir/cortexd.log)"
  "$bin/cortexd" --model "$model" --endpoint "$endpoint" --http off --log-level warn --auth "$keys/auth.json" \
    "${server_opts[@]}" "${runtime_opts[@]}" >>"$out_dir/cortexd.log" 2>&1 &
  daemon_pid=$!
  # cortex_load waits for health `ready` itself (--ready-timeout).
  "$bin/cortex_load" --endpoint "$endpoint" "${client_opts[@]}" --server-pid "$daemon_pid" "${load_opts[@]}" \
    --json "$2" || failed=1
  echo "uptime:$(uptime)"
  stop_daemon
  [[ -s "$2" ]] || { echo "compare: no $1 results (see above; cortexd log: $out_dir/cortexd.log)" >&2; exit 1; }
}

compare_rounds curve plain 0.97
