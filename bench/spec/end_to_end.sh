#!/usr/bin/env bash
# Speculative decoding end to end through cortexd, one stream (issue 13: on
# models whose outputs do not repeat, no more than 5% slower with it on).
# Each round starts one cortexd per setting, in turn: off, --speculative
# SPEC (the draft governor on) and SPEC with --speculative-adaptive off
# (every draft verified), and times ROUNDS x REQUESTS requests of
# PROMPT random prompt ids generating OUTPUT tokens with cortex_load.
#
#   bench/spec/end_to_end.sh MODEL.gguf
#
# Environment: ROUNDS (5), REQUESTS (4), PROMPT (64), OUTPUT (96),
# SPEC (3:8), THREADS (2), CORTEX_BIN_DIR (build/bin of this checkout).
set -euo pipefail
[ $# -eq 1 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
model=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CORTEX_BIN_DIR:-$root/build/bin}
spec=${SPEC:-3:8}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A sum
for round in $(seq 1 "${ROUNDS:-5}"); do
  for setting in off governor fixed; do
    port=$((20000 + RANDOM % 20000))
    case $setting in
      off) args=(--speculative off) ;;
      governor) args=(--speculative "$spec") ;;
      fixed) args=(--speculative "$spec" --speculative-adaptive off) ;;
    esac
    "$bin/cortexd" --model "$model" --endpoint "tcp://127.0.0.1:$port" --http off --threads "${THREADS:-2}" \
      --log-level warn "${args[@]}" >/dev/null 2>&1 &
    pid=$!
    tps=$("$bin/cortex_load" --endpoint "tcp://127.0.0.1:$port" --streams 1 --requests "${REQUESTS:-4}" --warmup 1 \
      --prompt-tokens "${PROMPT:-64}" --output-tokens "${OUTPUT:-96}" --quiet 2>&1 |
      awk '/throughput/ {print $2; exit}')
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    echo "round $round $setting: $tps tok/s"
    sum[$setting]=$(python3 -c "print(${sum[$setting]:-0} + $tps)")
  done
done
python3 -c "
off, gov, fixed = ${sum[off]}, ${sum[governor]}, ${sum[fixed]}
print('mean tok/s ratio vs off: governor %.3fx, every draft %.3fx' % (gov / off, fixed / off))"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
