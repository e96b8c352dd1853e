#!/usr/bin/python3
"""Scale-out measurements (issue 14): processes on 127.0.0.1, one JSON line
per run on stdout, logs in a temporary directory (printed).

  bench/cluster/cluster_bench.py affinity [--workers 3] [--model M]
      64 requests over 8 shared 512-token system prompts (token ids, seeded),
      8 in flight, through a router with --routing affinity and then
      round-robin (fresh workers each): the cluster prefix-cache hit rate
      (pooled over the workers) and TTFT p50/p90 (submit to first chunk).
  bench/cluster/cluster_bench.py scaling --model M [--streams 16] [--tokens 64]
      aggregate tok/s of N streams through a router over 1 worker, then 2
      workers (1 thread each), and of the worker alone (router cost).
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
    its own thread and connection. Returns (ttft list in ms, tokens, seconds)."""
    ttfts, tokens = [], [0]
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
                for ev in s:
                    if ev["t"] == "chunk" and first is None:
                        first = time.monotonic()
                if s.finished is None:
                    raise SystemExit("request failed: %r" % (s.error,))
                with lock:
                    ttfts.append(1000.0 * ((first or time.monotonic()) - t0))
                    tokens[0] += s.finished["usage"]["completion_tokens"]
        finally:
            c.close()

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(in_flight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ttfts, tokens[0], time.monotonic() - t0


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
            ttfts, tokens, secs = run_requests(router.endpoint, requests, 8)
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


def stream_load(endpoint, streams, n_tokens):
    reqs = [{"prompt": "Story %d: once upon a time" % i, "max_tokens": n_tokens, "temperature": 0, "ignore_eos": True}
            for i in range(streams)]
    ttfts, tokens, secs = run_requests(endpoint, reqs, streams)
    return {"tok_s": round(tokens / secs, 1), "ttft_ms_p50": round(statistics.median(ttfts), 1)}


def cmd_scaling(a):
    for n in (1, 2):
        router, workers = start_cluster(a.model, n, 1, "least-loaded")
        try:
            stream_load(router.endpoint, 2 * n, 8)  # warm-up
            r = stream_load(router.endpoint, a.streams, a.tokens)
            print(json.dumps(dict(bench="scaling", path="router", workers=n, streams=a.streams, **r)), flush=True)
            if n == 1:
                r = stream_load(workers[0].endpoint, a.streams, a.tokens)
                print(json.dumps(dict(bench="scaling", path="worker alone", workers=1, streams=a.streams, **r)), flush=True)
        finally:
            for p in [router] + workers:
                p.stop()


def cmd_ttft(a):
    router, workers = start_cluster(a.model, 1, 1, "affinity")
    try:
        for name, ep in (("worker alone", workers[0].endpoint), ("router", router.endpoint),
                         ("worker alone", workers[0].endpoint), ("router", router.endpoint)):
            reqs = [{"prompt": "Once upon a time", "max_tokens": 1, "temperature": 0} for _ in range(a.n)]
            ttfts, _, _ = run_requests(ep, reqs, 1)
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
    p = sub.add_parser("ttft")
    p.add_argument("--model", default=support.MODEL_PATH)
    p.add_argument("--n", type=int, default=50)
    a = ap.parse_args()
    print("logs: " + LOG_DIR, file=sys.stderr)
    {"affinity": cmd_affinity, "scaling": cmd_scaling, "ttft": cmd_ttft}[a.cmd](a)


if __name__ == "__main__":
    main()
