"""Tabulates one round of bench/load/compare_llama_server.sh: llama-server's
cortex_load JSON first, then one per cortexd --itl-target-ms setting.

    python3 compare_llama_summary.py LLAMA.json CORTEXD_1.json [CORTEXD_2.json ...]

Prints per run: tok/s, TTFT p50/p99 and ITL p50/p99 (ms), the 1-minute load
average and the server's CPU as % of one core over the run (on a shared
machine the share each run got differs: compare with it in mind), then per cortexd
run its ratios to llama-server (throughput x, TTFT p50 and ITL p99 as
fractions) against issue 12's done-when: throughput >= 3x, TTFT p50 <= 1/5,
ITL p99 <= 1/2. A cortexd file's setting is read from its name
(cortexd_<setting>_<round>.json).
"""
import json
import os
import sys

TARGETS = (("tok/s x", ">=", 3.0), ("TTFT p50", "<=", 0.2), ("ITL p99", "<=", 0.5))


def load(path):
    with open(path) as f:
        doc = json.load(f)
    r = doc["results"]
    return {"tok_s": r["tok_per_s"], "ttft": r["ttft_ms"], "itl": r["itl_ms"],
            "ok": r["requests_ok"], "total": r["requests_total"], "load": doc["load_average"][0],
            "srv_pct": 100 * r.get("server_cpu_s", 0) / r["wall_s"] if r.get("wall_s") else 0}


def setting(path):
    name = os.path.basename(path)
    parts = name[:-len(".json")].split("_")
    return parts[1] if len(parts) >= 3 else name


def main(args):
    if len(args) < 2:
        sys.exit(__doc__)
    base = load(args[0])
    rows = [("llama-server", base)] + [("cortexd " + setting(p), load(p)) for p in args[1:]]
    print("%-22s %8s %10s %10s %9s %9s %6s %7s %6s"
          % ("run", "tok/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "ok", "load1", "srv%"))
    for name, r in rows:
        print("%-22s %8.1f %10.0f %10.0f %9.0f %9.0f %3d/%-2d %7.2f %6.0f"
              % (name, r["tok_s"], r["ttft"]["p50"], r["ttft"]["p99"], r["itl"]["p50"], r["itl"]["p99"],
                 r["ok"], r["total"], r["load"], r["srv_pct"]))
    print("ratios to llama-server (done when: tok/s >= 3x, TTFT p50 <= 0.20, ITL p99 <= 0.50)")
    for name, r in rows[1:]:
        ratios = (r["tok_s"] / base["tok_s"] if base["tok_s"] else float("nan"),
                  r["ttft"]["p50"] / base["ttft"]["p50"] if base["ttft"]["p50"] else float("nan"),
                  r["itl"]["p99"] / base["itl"]["p99"] if base["itl"]["p99"] else float("nan"))
        met = all((v >= t) if op == ">=" else (v <= t) for v, (_, op, t) in zip(ratios, TARGETS))
        print("  %-20s tok/s %.2fx   TTFT p50 %.3f   ITL p99 %.3f   %s"
              % (name, ratios[0], ratios[1], ratios[2], "met" if met else "NOT met"))


if __name__ == "__main__":
    main(sys.argv[1:])
