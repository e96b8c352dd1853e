"""Summarises pairs of cortex_load JSON results (wire, in-process, wire, ...).

    python3 compare_summary.py WIRE_1.json INPROCESS_1.json [WIRE_2.json INPROCESS_2.json ...]

Prints per pair the aggregate tok/s ratio wire / in-process (issue 4's
target: >= 0.95), TTFT and ITL p50/p99, and the CPU seconds per generated
token of both modes (cortexd + client over the wire, the whole process
in-process): on a machine whose cores are shared, CPU per token is steadier
than tok/s. With several pairs, also the medians.
"""
import json
import statistics
import sys


def summarise(wire_path, inprocess_path, number):
    with open(wire_path) as f:
        w = json.load(f)
    with open(inprocess_path) as f:
        p = json.load(f)
    rw, rp = w["results"], p["results"]
    ratio = rw["tok_per_s"] / rp["tok_per_s"] if rp["tok_per_s"] else float("nan")
    cpu_wire = rw.get("server_cpu_s", float("nan")) + rw.get("cpu_s", 0.0)
    cpu_inproc = rp.get("cpu_s", float("nan"))
    if cpu_wire > 0 and rw["completion_tokens"] and rp["completion_tokens"]:
        cpu_ratio = (cpu_inproc / rp["completion_tokens"]) / (cpu_wire / rw["completion_tokens"])
    else:
        cpu_ratio = float("nan")
    print("pair %d" % number)
    print("  aggregate tok/s  wire %.2f   in-process %.2f   ratio %.3f (target >= 0.95)"
          % (rw["tok_per_s"], rp["tok_per_s"], ratio))
    for k in ("ttft_ms", "itl_ms"):
        print("  %-7s p50/p99  wire %.1f / %.1f   in-process %.1f / %.1f"
              % (k, rw[k]["p50"], rw[k]["p99"], rp[k]["p50"], rp[k]["p99"]))
    print("  CPU s            wire: cortexd %.2f + client %.2f (client: %.1f%% of a core)   in-process %.2f"
          % (rw.get("server_cpu_s", -1), rw.get("cpu_s", -1), rw.get("cpu_pct_of_wall", -1), cpu_inproc))
    print("  CPU/token        in-process / wire %.3f (1.0: the gateway costs no CPU)" % cpu_ratio)
    print("  load average     wire run %s   in-process run %s"
          % (" ".join("%.2f" % x for x in w["load_average"]), " ".join("%.2f" % x for x in p["load_average"])))
    return ratio, cpu_ratio


def main(paths):
    if not paths or len(paths) % 2:
        sys.exit(__doc__)
    ratios, cpu_ratios = [], []
    for n in range(0, len(paths), 2):
        ratio, cpu_ratio = summarise(paths[n], paths[n + 1], n // 2 + 1)
        ratios.append(ratio)
        cpu_ratios.append(cpu_ratio)
    if len(ratios) > 1:
        print("median over %d pairs: tok/s ratio %.3f, CPU/token ratio %.3f"
              % (len(ratios), statistics.median(ratios), statistics.median(cpu_ratios)))


if __name__ == "__main__":
    main(sys.argv[1:])
