"""Summarises pairs of cortex_load JSON results of two modes (A, B, A, B, ...).

    python3 compare_summary.py [--target MIN_RATIO] A_1.json B_1.json [A_2.json B_2.json ...]

The modes are read from the files ("wire", "wire-curve", "http", "in-process"). Prints per
pair the aggregate tok/s ratio A / B (with --target, whether it is at least
MIN_RATIO), TTFT and ITL p50/p99, the CPU seconds of each run (cortexd with
--server-pid plus the client over the wire or HTTP; the whole process
in-process) and the CPU per generated token ratio B / A: on a machine whose
cores are shared, CPU per token is steadier than tok/s. With several pairs,
also the medians.
"""
import json
import statistics
import sys


def cpu_seconds(r):
    """Everything the run cost: cortexd + client, or the whole process."""
    return r.get("server_cpu_s", 0.0) + r.get("cpu_s", 0.0)


def summarise(path_a, path_b, number, target):
    with open(path_a) as f:
        a = json.load(f)
    with open(path_b) as f:
        b = json.load(f)
    na, nb = a["mode"], b["mode"]
    ra, rb = a["results"], b["results"]
    ratio = ra["tok_per_s"] / rb["tok_per_s"] if rb["tok_per_s"] else float("nan")
    cpu_a, cpu_b = cpu_seconds(ra), cpu_seconds(rb)
    if cpu_a > 0 and ra["completion_tokens"] and rb["completion_tokens"]:
        cpu_ratio = (cpu_b / rb["completion_tokens"]) / (cpu_a / ra["completion_tokens"])
    else:
        cpu_ratio = float("nan")
    verdict = "" if target is None else "  (target >= %.2f: %s)" % (target, "met" if ratio >= target else "NOT met")
    print("pair %d" % number)
    print("  aggregate tok/s  %s %.2f   %s %.2f   ratio %s/%s %.3f%s"
          % (na, ra["tok_per_s"], nb, rb["tok_per_s"], na, nb, ratio, verdict))
    for k in ("ttft_ms", "itl_ms"):
        print("  %-7s p50/p99  %s %.1f / %.1f   %s %.1f / %.1f"
              % (k, na, ra[k]["p50"], ra[k]["p99"], nb, rb[k]["p50"], rb[k]["p99"]))
    for name, r in ((na, ra), (nb, rb)):
        if "server_cpu_s" in r:
            print("  CPU s %-10s cortexd %.2f + client %.2f (client: %.1f%% of a core)"
                  % (name, r["server_cpu_s"], r.get("cpu_s", -1), r.get("cpu_pct_of_wall", -1)))
        else:
            print("  CPU s %-10s process %.2f" % (name, r.get("cpu_s", -1)))
    print("  CPU/token        %s / %s %.3f (1.0: %s costs no more CPU per token)" % (nb, na, cpu_ratio, na))
    print("  load average     %s run %s   %s run %s"
          % (na, " ".join("%.2f" % x for x in a["load_average"]), nb, " ".join("%.2f" % x for x in b["load_average"])))
    return ratio, cpu_ratio


def main(args):
    target = None
    if args[:1] == ["--target"]:
        target = float(args[1])
        args = args[2:]
    if not args or len(args) % 2:
        sys.exit(__doc__)
    ratios, cpu_ratios = [], []
    for n in range(0, len(args), 2):
        ratio, cpu_ratio = summarise(args[n], args[n + 1], n // 2 + 1, target)
        ratios.append(ratio)
        cpu_ratios.append(cpu_ratio)
    if len(ratios) > 1:
        print("median over %d pairs: tok/s ratio %.3f, CPU/token ratio %.3f"
              % (len(ratios), statistics.median(ratios), statistics.median(cpu_ratios)))


if __name__ == "__main__":
    main(sys.argv[1:])
