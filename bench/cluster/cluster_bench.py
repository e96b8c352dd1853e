#!/usr/bin/python3
"""Scale-out measurements (issue 14): processes on 127.0.0.1, one JSON line
per run on stdout, logs in a temporary directory (printed).

  bench/cluster/cluster_bench.py affinity [--workers 3] [--model M]
      64 requests over 8 shared 512-token system prompts (token ids, seeded),
      8 in flight, through a router with --routing affinity and then
      round-robin (fresh workers each): the cluster prefix-cache hit rate
      (pooled over the workers) and TTFT p50/p90 (submit to first chunk).
  bench/cluster/cluster_bench.py scaling --model M [--streams 16] [--tokens 64] [--rounds 3] [--per-worker] [--threads]
      aggregate tok/s of N streams to a worker alone (1 thread), through a
      router over it, and through a router over it and a second one,
      interleaved for --rounds rounds; each line has the CPU seconds of
      every process and of the load client (per thread with --threads); the
      last line has the medians, the router's cost and the 2-over-1 scaling,
      and the ceiling of that ratio on a machine whose cores are all ours
      (scaling_summary).
  bench/cluster/cluster_bench.py ttft [--model M] [--n 50]
      TTFT p50 of sequential 1-token requests: worker alone vs through a router.

Environment: CORTEX_BIN_DIR (default build/bin), CORTEX_SHARED_DIR."""

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from tests.e2e import support  # noqa: E402  (free ports, the Python client on sys.path)
import cortexstream  # noqa: E402

BIN = support.BIN_DIR
LOG_DIR = tempfile.mkdtemp(prefix="cortex-cluster-bench-")


class Proc:
    def __init__(self, name, args):
        self.endpoint = "tcp://127.0.0.1:%d" % support.free_port()
        self.log = open(os.path.join(LOG_DIR, name + ".log"), "wb")
        self.proc = subprocess.Popen([os.path.join(BIN, "cortexd"), "--endpoint", self.endpoint, "--http", "off",
                                      "--log-level", "warn"] + args, stdout=self.log, stderr=self.log)
        c = cortexstream.Client(self.endpoint, timeout_s=0.5)
        try:
            def ready():
                if self.proc.poll() is not None:
                    raise SystemExit("%s exited; see %s" % (name, self.log.name))
                try:
                    return c.health().get("status") == "ready"
                except cortexstream.CortexTimeout:
                    return False
            support.wait_until(ready, 120, 0.05, name + " ready")
        finally:
            c.close()

    def client(self, timeout_s=600):
        return cortexstream.Client(self.endpoint, timeout_s=timeout_s)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)
        self.log.close()


def start_cluster(model, n_workers, threads, routing, extra=()):
    ports = [support.free_port() for _ in range(n_workers)]
    workers = [Proc("worker%d-%s" % (i, routing), ["--model", model, "--role", "worker", "--cluster-port", str(p),
                                                    "--threads", str(threads)] + list(extra))
               for i, p in enumerate(ports)]
    router = Proc("router-" + routing, ["--role", "router", "--routing", routing,
                                        "--workers", ",".join("127.0.0.1:%d" % p for p in ports)])
    per = workers[0].client().stats()["kv_blocks_total"]
    c = router.client()
    support.wait_until(lambda: c.stats()["kv_blocks_total"] == n_workers * per, 30, 0.05, "workers joined")
    c.close()
    return router, workers


def run_requests(endpoint, requests, in_flight):
    """Sends requests (dicts of submit kwargs), `in_flight` at a time, each on
    its own thread and connection. Returns (ttft list in ms, tokens, seconds,
    chunk events received)."""
    ttfts, tokens, chunks = [], [0], [0]
    lock = threading.Lock()
    queue = list(enumerate(requests))

    def worker():
        c = cortexstream.Client(endpoint, timeout_s=600)
        try:
            while True:
                with lock:
                    if not queue:
                        return
                    _, req = queue.pop(0)
                t0 = time.monotonic()
                first = None
                s = c.submit(**req)
                n_chunks = 0
                for ev in s:
                    if ev["t"] == "chunk":
                        n_chunks += 1
                        if first is None:
                            first = time.monotonic()
                if s.finished is None:
                    raise SystemExit("request failed: %r" % (s.error,))
                with lock:
                    ttfts.append(1000.0 * ((first or time.monotonic()) - t0))
                    tokens[0] += s.finished["usage"]["completion_tokens"]
                    chunks[0] += n_chunks
        finally:
            c.close()

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(in_flight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ttfts, tokens[0], time.monotonic() - t0, chunks[0]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def cmd_affinity(a):
    rng = random.Random(1)
    systems = [[rng.randrange(3, 512) for _ in range(512)] for _ in range(8)]
    requests = []
    for k in range(64):  # interleaved: the first 8 in flight carry 8 different system prompts
        question = [rng.randrange(3, 512) for _ in range(8)]
        requests.append({"tokens": systems[k % 8] + question, "max_tokens": 8, "temperature": 0})
    for routing in ("affinity", "round-robin"):
        router, workers = start_cluster(a.model, a.workers, 1, routing)
        try:
            ttfts, tokens, secs, _ = run_requests(router.endpoint, requests, 8)
            c = router.client()
            time.sleep(0.5)  # one stats poll after the last request
            st = c.stats()
            c.close()
            print(json.dumps({"bench": "affinity", "routing": routing, "workers": a.workers, "requests": len(requests),
                              "prefix_cache_hit_rate": round(st["prefix_cache_hit_rate"], 4),
                              "ttft_ms_p50": round(statistics.median(ttfts), 1), "ttft_ms_p90": round(pct(ttfts, 90), 1),
                              "seconds": round(secs, 2)}), flush=True)
        finally:
            for p in [router] + workers:
                p.stop()


def stream_requests(streams, n_tokens):
    # Token ids in every chunk: each token is an event that crosses the
    # router, whatever text the model makes (a model with random weights
    # makes tokens that are no whole UTF-8 character, hence no text chunks).
    return [{"prompt": "Story %d: once upon a time" % i, "max_tokens": n_tokens, "temperature": 0, "ignore_eos": True,
             "want_token_ids": True} for i in range(streams)]


def stream_load(endpoint, streams, n_tokens):
    ttfts, tokens, secs, _ = run_requests(endpoint, stream_requests(streams, n_tokens), streams)
    return {"tok_s": round(tokens / secs, 1), "ttft_ms_p50": round(statistics.median(ttfts), 1)}


def proc_cpu_s(pid):
    """CPU seconds (user + system) process `pid` has used, and per thread as
    "name/tid" (/proc/<pid>/task/*: CAF names its threads, e.g. caf.multiplexer)."""
    tick = os.sysconf("SC_CLK_TCK")
    def read(path):
        with open(path) as f:
            s = f.read()
        fields = s[s.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / tick
    by_name = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip()
            by_name[name + "/" + tid] = read("/proc/%d/task/%s/stat" % (pid, tid))
        except OSError:
            pass  # a thread that ended meanwhile
    return read("/proc/%d/stat" % pid), by_name


def client_cpu_s():
    t = os.times()
    return t.user + t.system


def measured_load(endpoint, procs, streams, n_tokens):
    """stream_load plus the CPU seconds each process (procs: name -> Proc) and
    this load client used during it, in total and per generated token."""
    before = {n: proc_cpu_s(p.proc.pid) for n, p in procs.items()}
    c0, w0 = client_cpu_s(), time.monotonic()
    ttfts, tokens, secs, chunks = run_requests(endpoint, stream_requests(streams, n_tokens), streams)
    wall = time.monotonic() - w0
    cpu = {"client": round(client_cpu_s() - c0, 2)}
    threads = {}
    for n, p in procs.items():
        total, by_name = proc_cpu_s(p.proc.pid)
        cpu[n] = round(total - before[n][0], 2)
        threads[n] = {t: round(v - before[n][1].get(t, 0.0), 2) for t, v in by_name.items()
                      if v - before[n][1].get(t, 0.0) >= 0.05}
    return {"tok_s": round(tokens / secs, 1), "ttft_ms_p50": round(statistics.median(ttfts), 1), "wall_s": round(wall, 2),
            "chunks": chunks,
            "cpu_s": cpu, "cpu_ms_per_token": {n: round(1000.0 * v / tokens, 3) for n, v in cpu.items()},
            "cpu_used_of_available": round(sum(cpu.values()) / (wall * os.cpu_count()), 3), "threads": threads}


def scaling_summary(results):
    """Medians over the rounds, and what CPU-seconds accounting allows.

    A worker of 1 thread computes on one core: its tok/s cannot pass
    1000 / (its CPU ms per token). Two of them, with the router and the load
    client, cannot pass (cores) * 1000 / (CPU ms per token of all the
    processes together), whatever else runs. The ceiling of the 2-over-1
    ratio on a machine of our own is the second over the first; the measured
    ratio falls short of it by what other load took (cores_ours: the cores
    our processes got during the run)."""
    def med(key, f):
        return round(statistics.median(f(r) for r in results[key]), 3)
    alone, r1, r2 = ("worker alone", 1), ("router", 1), ("router", 2)
    total_ms = lambda r: sum(r["cpu_ms_per_token"].values())
    one_worker_ceiling = 1000.0 / med(r1, lambda r: r["cpu_ms_per_token"]["worker0"])
    two_worker_ceiling = os.cpu_count() * 1000.0 / med(r2, total_ms)
    out = {"bench": "scaling", "summary": "medians", "loadavg": os.getloadavg(), "cores": os.cpu_count()}
    for name, key in (("worker_alone", alone), ("router_1", r1), ("router_2", r2)):
        out[name + "_tok_s"] = med(key, lambda r: r["tok_s"])
        out[name + "_cpu_ms_per_token"] = {p: med(key, lambda r: r["cpu_ms_per_token"][p]) for p in results[key][0]["cpu_ms_per_token"]}
        out[name + "_cores_ours"] = round(med(key, lambda r: sum(r["cpu_s"].values()) / r["wall_s"]), 2)
    out["router_cost"] = round(1 - out["router_1_tok_s"] / out["worker_alone_tok_s"], 3)
    # Each round's router run against the worker-alone run just before it:
    # drift between rounds cancels; the standard error says what is noise.
    paired = [1 - r["tok_s"] / w["tok_s"] for w, r in zip(results[alone], results[r1])]
    out["router_cost_paired"] = round(statistics.mean(paired), 3)
    if len(paired) > 1:
        out["router_cost_paired_se"] = round(statistics.stdev(paired) / len(paired) ** 0.5, 3)
    out["router_cpu_share"] = round(out["router_1_cpu_ms_per_token"]["router1"] / out["router_1_cpu_ms_per_token"]["worker0"], 4)
    out["scaling_2_over_1"] = round(out["router_2_tok_s"] / out["router_1_tok_s"], 3)
    out["scaling_ceiling_own_machine"] = round(two_worker_ceiling / one_worker_ceiling, 3)
    return out


def cmd_scaling(a):
    """Three paths on processes that all stay up (worker A alone, a router
    over A, a router over A and B), run interleaved for --rounds rounds so a
    machine whose load drifts affects them alike. Every line carries the CPU
    seconds of each process and of this client during that run."""
    ports = [support.free_port() for _ in range(2)]
    extra = list(a.worker_args.split()) if a.worker_args else []
    workers = [Proc("worker%d" % i, ["--model", a.model, "--role", "worker", "--cluster-port", str(p), "--threads", "1"] + extra)
               for i, p in enumerate(ports)]
    rextra = list(a.router_args.split()) if a.router_args else []
    routers = [Proc("router%d" % n, ["--role", "router", "--routing", "least-loaded",
                                     "--workers", ",".join("127.0.0.1:%d" % p for p in ports[:n])] + rextra) for n in (1, 2)]
    try:
        per = workers[0].client().stats()["kv_blocks_total"]
        for n, r in zip((1, 2), routers):
            c = r.client()
            support.wait_until(lambda: c.stats()["kv_blocks_total"] == n * per, 30, 0.05, "workers joined")
            c.close()
        procs = {"worker0": workers[0], "worker1": workers[1], "router1": routers[0], "router2": routers[1]}
        paths = [("worker alone", 1, workers[0].endpoint), ("router", 1, routers[0].endpoint), ("router", 2, routers[1].endpoint)]
        # Warm-up: one full unmeasured round. A fresh worker's first run is
        # some 4% slower (the first touch of its KV pages), which once made
        # whichever path ran first look costlier.
        for _, n, ep in paths:
            stream_load(ep, a.streams * (n if a.per_worker else 1), a.tokens)
        print(json.dumps({"bench": "scaling", "loadavg": os.getloadavg()}), flush=True)
        results = {}
        for rnd in range(a.rounds):
            for name, n, ep in paths:
                streams = a.streams * (n if a.per_worker else 1)
                r = measured_load(ep, procs, streams, a.tokens)
                if not a.threads:
                    del r["threads"]
                results.setdefault((name, n), []).append(r)
                print(json.dumps(dict(bench="scaling", round=rnd, path=name, workers=n, streams=streams, tokens=a.tokens, **r)),
                      flush=True)
        print(json.dumps(scaling_summary(results)), flush=True)
    finally:
        for p in routers + workers:
            p.stop()


def cmd_ttft(a):
    router, workers = start_cluster(a.model, 1, 1, "affinity")
    try:
        for name, ep in (("worker alone", workers[0].endpoint), ("router", router.endpoint),
                         ("worker alone", workers[0].endpoint), ("router", router.endpoint)):
            reqs = [{"prompt": "Once upon a time", "max_tokens": 1, "temperature": 0} for _ in range(a.n)]
            ttfts, _, _, _ = run_requests(ep, reqs, 1)
            print(json.dumps({"bench": "ttft", "path": name, "n": a.n, "ttft_ms_p50": round(statistics.median(ttfts), 3),
                              "ttft_ms_p90": round(pct(ttfts, 90), 3)}), flush=True)
    finally:
        for p in [router] + workers:
            p.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("affinity")
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--model", default=support.MODEL_PATH)
    p = sub.add_parser("scaling")
    p.add_argument("--model", required=True)
    p.add_argument("--streams", type=int, default=16)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--per-worker", action="store_true",
                   help="--streams per worker: the router over 2 workers gets twice as many streams (each worker batches as "
                        "many as the single one)")
    p.add_argument("--threads", action="store_true", help="also CPU seconds per thread name of each process")
    p.add_argument("--worker-args", default="", help="extra cortexd flags of both workers")
    p.add_argument("--router-args", default="", help="extra cortexd flags of both routers")
    p = sub.add_parser("ttft")
    p.add_argument("--model", default=support.MODEL_PATH)
    p.add_argument("--n", type=int, default=50)
    a = ap.parse_args()
    print("logs: " + LOG_DIR, file=sys.stderr)
    {"affinity": cmd_affinity, "scaling": cmd_scaling, "ttft": cmd_ttft}[a.cmd](a)


if __name__ == "__main__":
    main()
