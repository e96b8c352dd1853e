#!/usr/bin/env bash
# Two builds of cortex on one model, interleaved round by round, so drift on
# a shared machine hits both alike (issue 12: "on a machine without AMX, no
# figure gets worse than today's"). Each round runs `cortex bench` once per
# build (prefill, decode at each batch); the table gives each build's median
# over the rounds and new/old ratios.
#
#   bench/compare_builds.sh OLD_BIN_DIR NEW_BIN_DIR MODEL.gguf
#
# Environment: ROUNDS (default 3), PROMPT (prefill tokens, default 512),
# DECODE (decode steps, default 32), BATCHES (default 1,16), THREADS
# (default 2), OLD_ARGS / NEW_ARGS (extra `cortex bench` flags for one side,
# e.g. NEW_ARGS="--kv-type f32" to compare at the old default K/V type).
set -euo pipefail

if [ $# -ne 3 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
old_bin=$1 new_bin=$2 model=$3
for b in "$old_bin" "$new_bin"; do
  [ -x "$b/cortex" ] || { echo "compare_builds: no cortex in $b" >&2; exit 2; }
done
[ -f "$model" ] || { echo "compare_builds: no model file $model" >&2; exit 2; }
rounds=${ROUNDS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
for r in $(seq 1 "$rounds"); do
  for side in old new; do
    if [ "$side" = old ]; then bin=$old_bin extra=${OLD_ARGS:-}; else bin=$new_bin extra=${NEW_ARGS:-}; fi
    # shellcheck disable=SC2086  # extra flags are words
    "$bin/cortex" bench --model "$model" --threads "${THREADS:-2}" --prompt-tokens "${PROMPT:-512}" \
      --decode-tokens "${DECODE:-32}" --batches "${BATCHES:-1,16}" --repeat 1 --json $extra 2>/dev/null |
      tail -1 >"$out/$side.$r.json"
    echo "round $r $side done (load $(cut -d' ' -f1 /proc/loadavg))"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def figures(side):
    runs = [json.load(open("%s/%s.%d.json" % (out, side, r))) for r in range(1, rounds + 1)]
    f = {"prefill-%d tok/s" % runs[0]["prefill_tokens"]: [x["prefill_tps"] for x in runs]}
    for i, d in enumerate(runs[0]["decode"]):
        f["decode batch %d tok/s" % d["batch"]] = [x["decode"][i]["tps"] for x in runs]
    return f
old, new = figures("old"), figures("new")
print("| figure | old (median of %d) | new | new/old |" % rounds)
print("|---|---|---|---|")
for k in old:
    o, n = statistics.median(old[k]), statistics.median(new[k])
    print("| %s | %.1f | %.1f | %.2fx |" % (k, o, n, n / o))
EOF
