"""Scale-out (issue 14) on 127.0.0.1: a router (`cortexd --role router`) in
front of workers (`cortexd --role worker --cluster-port P`, stories260K, 1
thread each) over CAF's middleman. Greedy outputs through the router equal
llama.cpp's golden text; 32 concurrent streams complete; cancel and a
client gone cross the router and free the worker's KV blocks; a worker
killed with SIGKILL mid-load ends each of its requests exactly once
(resubmitted, or 503 worker_lost when already streaming), new requests go
to the others at once, and the restarted worker rejoins and gets traffic.
Each worker also keeps its own ZeroMQ gateway, which the tests use to read
that worker's own stats."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from tests.e2e import auth_support, http_support, support

LONG = 2000  # tokens: long enough to be mid-stream when the test acts (ctx 2048)
N_TOKENS = 200  # per request of the SIGKILL test


def start_worker(port, *args, keep_port=False, **kwargs):
    """A worker cortexd on cluster port `port`, and the port it got. Unless
    keep_port (a router already knows the port), a port taken between
    free_port()'s probe and the worker's bind (another test running in
    parallel) is replaced by a new one."""
    for attempt in range(3):
        try:
            return support.Cortexd("--role", "worker", "--cluster-port", str(port), "--threads", "1", "--http", "off",
                                   *args, **kwargs).start(), port
        except AssertionError as e:
            if keep_port or attempt == 2 or "is the port in use?" not in str(e):
                raise
            port = support.free_port()


class Cluster:
    """n workers and one router, every process on a free loopback port."""

    def __init__(self, n_workers, router_args=(), worker_args=()):
        self.ports = [support.free_port() for _ in range(n_workers)]
        self.workers = [None] * n_workers
        self.router = None
        self.router_args = list(router_args)
        self.worker_args = list(worker_args)

    def start_worker(self, i):
        """Starts worker i; before a router knows its port, on another one if
        the port was taken (start_worker); a restart keeps it."""
        if self.workers[i] is not None:
            self.workers[i].close()
        self.workers[i], self.ports[i] = start_worker(self.ports[i], *self.worker_args, keep_port=self.router is not None)
        return self.workers[i]

    def start(self):
        for i in range(len(self.ports)):
            self.start_worker(i)
        workers = ",".join("127.0.0.1:%d" % p for p in self.ports)
        self.router = support.Cortexd("--role", "router", "--workers", workers, *self.router_args).start()
        self.wait_joined(len(self.ports))
        return self

    def wait_joined(self, n):
        """Until the router's stats add up n workers' KV pools."""
        per_worker = next(w for w in self.workers if w).client().stats()["kv_blocks_total"]
        c = self.router.client()
        support.wait_until(lambda: c.stats()["kv_blocks_total"] == n * per_worker, 20, 0.05,
                           "%d workers joined the router" % n)

    def close(self):
        for p in [self.router] + self.workers:
            if p is not None:
                p.close()

    def logs(self):
        return "\n".join("--- %s\n%s" % (name, p.log(4000)) for name, p in
                         [("router", self.router)] + [("worker %d" % i, w) for i, w in enumerate(self.workers)] if p)


def wait_idle(server, what):
    c = server.client()

    def idle():
        st = c.stats()
        return (st["running"], st["waiting"], st["kv_blocks_used"]) == (0, 0, 0)

    support.wait_until(idle, 10, 0.05, what + " idle with its KV blocks freed")


class ThreeWorkers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(3).start()

    @classmethod
    def tearDownClass(cls):
        try:
            code = cls.cluster.router.stop()
            assert code == 0, cls.cluster.logs()
        finally:
            cls.cluster.close()

    def test_greedy_outputs_equal_the_golden_text(self):
        c = self.cluster.router.client()
        for case in support.golden_cases():
            with self.subTest(prompt=case["prompt"]):
                req = {"prompt": case["prompt"]} if case["prompt"] is not None else {"tokens": case["tokens"]}
                text, fin = c.submit(max_tokens=case["n_gen"], temperature=0, **req).result()
                self.assertEqual(text, case["text"])
                self.assertEqual(fin["reason"], "length")
                self.assertEqual(fin["usage"]["completion_tokens"], case["n_gen"])
                self.assertEqual(fin["usage"]["prompt_tokens"], len(case["tokens"]))

    def test_32_concurrent_streams_complete_across_the_workers(self):
        before = [w.client().stats()["tokens_generated"] for w in self.cluster.workers]
        c = self.cluster.router.client(timeout_s=60)
        streams = [c.submit(prompt="Story %d: once upon a time" % i, max_tokens=24, temperature=0, ignore_eos=True)
                   for i in range(32)]
        for s in streams:
            text, fin = s.result()
            self.assertEqual((fin["reason"], fin["usage"]["completion_tokens"]), ("length", 24))
            self.assertEqual([e["seq"] for e in s.events], list(range(len(s.events))))
        after = [w.client().stats()["tokens_generated"] for w in self.cluster.workers]
        for i, (b, a) in enumerate(zip(before, after)):
            self.assertGreater(a, b, "worker %d got none of 32 requests" % i)

    def test_router_stats_aggregate_the_workers(self):
        st = self.cluster.router.client().stats()
        total = sum(w.client().stats()["kv_blocks_total"] for w in self.cluster.workers)
        self.assertEqual(st["kv_blocks_total"], total)
        self.assertEqual(self.cluster.router.client().health()["status"], "ready")
        models = self.cluster.router.client().models()
        self.assertEqual(models[0]["n_vocab"], 512)

    def test_http_through_the_router(self):
        base = self.cluster.router.http
        case = support.golden_cases()[0]
        status, body = http_support.post_json(base, "/v1/completions", {"prompt": case["prompt"], "temperature": 0,
                                                                        "max_tokens": case["n_gen"]})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["choices"][0]["text"], case["text"])
        self.assertEqual(http_support.request(base, "GET", "/health/ready")[0], 200)
        _, families = http_support.metrics(base)
        for i, port in enumerate(self.cluster.ports):
            worker = "127.0.0.1:%d" % port
            self.assertEqual(http_support.sample_sum(families, "cortex_worker_up", worker=worker), 1.0, worker)
            self.assertIn(worker, {s.labels.get("worker") for s in families["cortex_worker_kv_blocks_used"].samples})
        total = sum(w.client().stats()["kv_blocks_total"] for w in self.cluster.workers)
        self.assertEqual(http_support.sample_sum(families, "cortex_kv_blocks_total"), total)
        self.assertIn("cortex_router_affinity_picks", families)

    def test_cancel_crosses_the_router_and_frees_the_worker(self):
        c = self.cluster.router.client()
        s = c.submit(prompt="Once upon a time", max_tokens=LONG, ignore_eos=True)
        for ev in s:
            if ev["t"] == "chunk":
                s.cancel()
                break
        for _ in s:
            pass
        self.assertEqual(s.finished["reason"], "cancelled")
        self.assertLess(s.finished["usage"]["completion_tokens"], LONG)
        for i, w in enumerate(self.cluster.workers):
            wait_idle(w, "worker %d" % i)

    def test_client_gone_crosses_the_router_and_frees_the_worker(self):
        gone = self.cluster.router.client()
        s = gone.submit(prompt="Once upon a time", max_tokens=LONG, ignore_eos=True)
        for ev in s:
            if ev["t"] == "chunk":
                break
        busy = [w.client().stats()["running"] for w in self.cluster.workers]
        self.assertEqual(sum(busy), 1, busy)
        gone.close()
        for i, w in enumerate(self.cluster.workers):
            wait_idle(w, "worker %d" % i)
        wait_idle(self.cluster.router, "the router")


class ClusterPerTest(unittest.TestCase):
    """A fresh cluster of N_WORKERS for each test (the tests kill workers)."""

    N_WORKERS = 2
    WORKER_ARGS = ()
    ROUTER_ARGS = ()

    def setUp(self):
        self.cluster = Cluster(self.N_WORKERS, router_args=self.ROUTER_ARGS, worker_args=self.WORKER_ARGS).start()

    def tearDown(self):
        self.cluster.close()


class WorkerKilledMidLoad(ClusterPerTest):
    # Two running per worker: the rest wait without a token, so the victim
    # has requests of both kinds when it dies.
    WORKER_ARGS = ("--max-running", "2")
    def test_every_request_ends_once_then_the_worker_rejoins(self):
        cl = self.cluster
        c = cl.router.client(timeout_s=60)
        streams = [c.submit(prompt="Tale %d of a cat" % i, max_tokens=N_TOKENS, temperature=0, ignore_eos=True,
                            want_token_ids=True) for i in range(16)]
        victim = cl.workers[0]
        # A few steps in: its running requests' first chunks have reached their clients.
        support.wait_until(lambda: victim.client().stats()["tokens_generated"] > 8, 20, 0.01, "worker 0 generating")
        victim.stop(signal.SIGKILL)
        t_kill = time.monotonic()
        # A new request is served by the survivor at once. It goes on the same
        # client: a second client waited on here would leave this one unread
        # while 16 streams pour in, and a client that far behind is dropped as
        # gone (the slow-reader rule), which is not what this test is about.
        after = c.submit(prompt="After the fall", max_tokens=4, temperature=0)
        self.assertEqual(next(after)["t"], "accepted")
        self.assertLess(time.monotonic() - t_kill, 1.0, "a new request reaches the other worker within 1 s")
        self.assertEqual(after.result()[1]["reason"], "length")
        outcomes = {"length": 0, "worker_lost": 0}
        for s in streams:
            events = list(s)
            terminals = [e for e in events if e["t"] in ("finished", "error")]
            self.assertEqual(len(terminals), 1, events[-3:])
            self.assertIs(events[-1], terminals[0])
            fin = terminals[0]
            ids = [i for e in events if e["t"] == "chunk" for i in e.get("token_ids", [])] + fin.get("token_ids", [])
            if fin.get("reason") == "length":
                outcomes["length"] += 1
                self.assertEqual(len(ids), N_TOKENS, "no token lost or duplicated by a resubmission")
            else:
                err = fin.get("error") or fin
                self.assertEqual((err.get("code"), err.get("name"), err.get("retryable")), (503, "worker_lost", True), fin)
                outcomes["worker_lost"] += 1
        self.assertGreater(outcomes["worker_lost"], 0, "some requests were streaming on the killed worker")
        self.assertEqual(sum(outcomes.values()), 16)
        moved = re.search(r"(\d+) requests resubmitted, (\d+) ended with worker_lost", cl.router.log())
        self.assertIsNotNone(moved, cl.logs())
        self.assertGreater(int(moved.group(1)), 0, "the victim's waiting requests moved to the survivor")
        self.assertEqual(int(moved.group(2)), outcomes["worker_lost"])
        # The worker comes back on its port and gets traffic again.
        cl.start_worker(0)
        cl.wait_joined(2)
        before = cl.workers[0].client().stats()["tokens_generated"]
        for s in [c.submit(prompt="Return %d of the worker" % i, max_tokens=8, temperature=0) for i in range(12)]:
            self.assertEqual(s.result()[1]["reason"], "length")
        self.assertGreater(cl.workers[0].client().stats()["tokens_generated"], before, cl.logs())
        self.assertEqual(cl.router.stop(), 0, cl.logs())


class LastWorkerGone(ClusterPerTest):
    N_WORKERS = 1

    def test_health_follows_the_workers(self):
        cl = self.cluster
        c = cl.router.client()
        self.assertEqual(c.health()["status"], "ready")
        cl.workers[0].stop(signal.SIGKILL)
        support.wait_until(lambda: c.health()["status"] == "starting", 5, 0.02, "router health starting")
        s = c.submit(prompt="Nobody home", max_tokens=4)
        events = list(s)
        self.assertEqual(len(events), 1, events)
        self.assertEqual((events[0]["t"], events[0]["code"], events[0]["retryable"]), ("error", 503, True), events)
        cl.start_worker(0)
        support.wait_until(lambda: c.health()["status"] == "ready", 10, 0.05, "router health ready again")
        self.assertEqual(c.submit(prompt="Back again", max_tokens=4).result()[1]["reason"], "length")
        # A worker stopped with SIGTERM while the router is connected exits 0; the router notices.
        self.assertEqual(cl.workers[0].stop(), 0, cl.logs())
        support.wait_until(lambda: c.health()["status"] == "starting", 5, 0.02, "router health starting")
        self.assertEqual(cl.router.stop(), 0, cl.logs())


class WorkerDraining(ClusterPerTest):
    ROUTER_ARGS = ("--routing", "round-robin")
    WORKER_ARGS = ("--grace-ms", "20000")

    def test_requests_refused_by_a_draining_worker_go_to_another(self):
        cl = self.cluster
        direct = cl.workers[0].client()
        busy = direct.submit(prompt="Keep busy", max_tokens=LONG, ignore_eos=True)  # holds its grace period open
        self.assertEqual(next(busy)["t"], "accepted")
        cl.workers[0].proc.send_signal(signal.SIGTERM)
        support.wait_until(lambda: direct.health()["status"] == "draining", 5, 0.01, "worker 0 draining")
        c = cl.router.client()
        for s in [c.submit(prompt="Moved %d" % i, max_tokens=4, temperature=0) for i in range(6)]:
            self.assertEqual(s.result()[1]["reason"], "length")
        self.assertIn("is draining", cl.router.log(), cl.logs())
        busy.cancel()
        self.assertEqual(cl.workers[0].proc.wait(30), 0)


class WorkersFile(unittest.TestCase):
    def setUp(self):
        self.cluster = Cluster(2)
        self.folder = tempfile.mkdtemp(prefix="cortex-workers-")

    def tearDown(self):
        self.cluster.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def test_sighup_rereads_the_workers_file(self):
        cl = self.cluster
        for i in range(2):
            cl.start_worker(i)
        path = os.path.join(self.folder, "workers")
        with open(path, "w") as f:
            f.write("# the first worker only\n127.0.0.1:%d\n" % cl.ports[0])
        cl.router = support.Cortexd("--role", "router", "--workers-file", path).start()
        cl.wait_joined(1)
        with open(path, "w") as f:
            f.write("127.0.0.1:%d\n127.0.0.1:%d  # joined on SIGHUP\n" % tuple(cl.ports))
        cl.router.proc.send_signal(signal.SIGHUP)
        cl.wait_joined(2)
        with open(path, "w") as f:
            f.write("not-an-address\n")
        cl.router.proc.send_signal(signal.SIGHUP)  # a bad file keeps the workers in force
        support.wait_until(lambda: "keeping the workers in force" in cl.router.log(), 5, 0.05, "the refusal logged")
        cl.wait_joined(2)
        self.assertEqual(cl.router.stop(), 0, cl.logs())


class WithAccessControl(unittest.TestCase):
    """--auth on the router and its worker: the router authenticates, the
    key id travels to the worker, whose intake applies the key's tier."""

    def setUp(self):
        self.secret = auth_support.new_secret()
        self.keys = auth_support.KeysFile({"small": {"max_tokens": 8}},
                                          [auth_support.key_entry("alice", "small", self.secret)])
        auth = {"auth": self.secret}
        self.worker, port = start_worker(support.free_port(), "--auth", self.keys.path, client_kwargs=auth)
        self.router = support.Cortexd("--role", "router", "--workers", "127.0.0.1:%d" % port, "--auth", self.keys.path,
                                      client_kwargs=auth).start()

    def tearDown(self):
        self.router.close()
        self.worker.close()
        self.keys.close()

    def test_keys_and_tiers_through_the_router(self):
        text, fin = self.router.client().submit(prompt="Once upon a time", max_tokens=8, temperature=0).result()
        self.assertEqual(fin["reason"], "length")
        status, _, _ = auth_support.http_call(self.router.http, "POST", "/v1/completions",
                                              {"prompt": "Once upon a time", "max_tokens": 4})
        self.assertEqual(status, 401, "no key")
        status, _, body = auth_support.http_call(self.router.http, "POST", "/v1/completions",
                                                 {"prompt": "Once upon a time", "max_tokens": 64}, key=self.secret)
        self.assertEqual(status, 403, "the worker applies the tier's max_tokens cap: %r" % (body,))


class RouterKilled(ClusterPerTest):
    N_WORKERS = 1

    def test_the_worker_cancels_what_a_dead_router_asked_for(self):
        cl = self.cluster
        s = cl.router.client().submit(prompt="Once upon a time", max_tokens=LONG, ignore_eos=True)
        for ev in s:
            if ev["t"] == "chunk":
                break
        self.assertEqual(cl.workers[0].client().stats()["running"], 1)
        cl.router.stop(signal.SIGKILL)
        wait_idle(cl.workers[0], "the worker")
        self.assertEqual(cl.workers[0].client().stats()["requests_finished"]["client_gone"], 1)


def make_certificates(folder):
    """A CA and one node certificate it signed (`openssl req`), as PEM files:
    returns the --cluster-cert/-key/-ca flags."""
    def run(*args):
        subprocess.run(["openssl"] + list(args), cwd=folder, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=cortex-test-ca",
        "-keyout", "ca.key", "-out", "ca.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=cortex-node", "-keyout", "node.key", "-out", "node.csr")
    run("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
        "-out", "node.pem")
    return ["--cluster-cert", os.path.join(folder, "node.pem"), "--cluster-key", os.path.join(folder, "node.key"),
            "--cluster-ca", os.path.join(folder, "ca.pem")]


class Exposure(unittest.TestCase):
    def refused(self, *args):
        p = subprocess.run([os.path.join(support.BIN_DIR, "cortexd"), "--model", support.MODEL_PATH, "--http", "off"] +
                           list(args), capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        return p.stderr

    def test_a_plaintext_cluster_link_outside_loopback_is_refused(self):
        err = self.refused("--role", "worker", "--cluster-port", "7001", "--cluster-bind", "0.0.0.0")
        self.assertIn("--cluster-cert", err)
        err = self.refused("--role", "router", "--workers", "10.1.2.3:7001")
        self.assertIn("--insecure", err)

    def test_role_flags_say_what_is_missing(self):
        self.assertIn("--cluster-port", self.refused("--role", "worker"))
        self.assertIn("--workers", self.refused("--role", "router"))
        self.assertIn("all of --cluster-cert", self.refused("--role", "worker", "--cluster-port", "7001",
                                                            "--cluster-cert", "x.pem"))
        self.assertIn("routing", self.refused("--role", "router", "--workers", "127.0.0.1:7001", "--routing", "random"))


class OverTls(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="cortex-tls-")
        self.tls = make_certificates(self.folder)
        self.cluster = Cluster(1, router_args=self.tls, worker_args=self.tls)

    def tearDown(self):
        self.cluster.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def test_a_router_and_a_worker_talk_over_tls(self):
        cl = self.cluster.start()
        case = support.golden_cases()[0]
        text, fin = cl.router.client().submit(prompt=case["prompt"], max_tokens=case["n_gen"], temperature=0).result()
        self.assertEqual(text, case["text"])
        self.assertIn("TLS", cl.router.log())
        # Neither a plaintext router nor one whose certificate another CA
        # signed can reach the worker: they never become ready.
        os.mkdir(os.path.join(self.folder, "other"))
        foreign = make_certificates(os.path.join(self.folder, "other"))
        for extra in ([], foreign):
            router = support.Cortexd("--role", "router", "--workers", "127.0.0.1:%d" % cl.ports[0], *extra,
                                     ready_timeout_s=3)
            try:
                with self.assertRaises(AssertionError):
                    router.start()
            finally:
                router.close()


class AcrossNetworkNamespaces(unittest.TestCase):
    """A worker in a network namespace of its own, reached over a veth pair
    (made and removed here), with the OpenSSL transport: the cluster link
    leaves loopback, as it does between machines."""

    def setUp(self):
        self.ns = "cxt%d" % os.getpid()
        self.net = "10.231.%d" % (os.getpid() % 250 + 1)
        self.proc = None
        self.router = None
        self.folder = tempfile.mkdtemp(prefix="cortex-netns-")
        steps = [["ip", "netns", "add", self.ns],
                 ["ip", "link", "add", self.ns + "a", "type", "veth", "peer", "name", self.ns + "b"],
                 ["ip", "link", "set", self.ns + "b", "netns", self.ns],
                 ["ip", "addr", "add", self.net + ".1/24", "dev", self.ns + "a"],
                 ["ip", "link", "set", self.ns + "a", "up"],
                 ["ip", "netns", "exec", self.ns, "ip", "addr", "add", self.net + ".2/24", "dev", self.ns + "b"],
                 ["ip", "netns", "exec", self.ns, "ip", "link", "set", self.ns + "b", "up"],
                 ["ip", "netns", "exec", self.ns, "ip", "link", "set", "lo", "up"]]
        for step in steps:
            try:
                p = subprocess.run(step, capture_output=True, text=True)
            except OSError as e:
                self.cleanup()
                self.skipTest("no `ip` command (%s)" % e)
            if p.returncode != 0:
                self.cleanup()
                self.skipTest("this machine forbids network namespaces (%s: %s)" % (" ".join(step), p.stderr.strip()))

    def cleanup(self):
        if self.router is not None:
            self.router.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        subprocess.run(["ip", "link", "del", self.ns + "a"], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def tearDown(self):
        self.cleanup()

    def test_a_worker_in_another_namespace_over_tls(self):
        tls = make_certificates(self.folder)
        port = support.free_port()
        endpoint = "ipc://" + os.path.join(self.folder, "worker.sock")  # its own gateway, for the readiness probe
        log = open(os.path.join(self.folder, "worker.log"), "wb")
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, os.path.join(support.BIN_DIR, "cortexd"),
                                      "--model", support.MODEL_PATH, "--role", "worker", "--threads", "1", "--http", "off",
                                      "--endpoint", endpoint, "--cluster-bind", self.net + ".2", "--cluster-port",
                                      str(port)] + tls, stdout=log, stderr=log)
        probe = support.cortexstream.Client(endpoint, timeout_s=0.5)

        def ready():
            self.assertIsNone(self.proc.poll(), "the worker exited")
            try:
                return probe.health().get("status") == "ready"
            except support.cortexstream.CortexTimeout:
                return False
        try:
            support.wait_until(ready, 60, 0.05, "the worker in its namespace")
        finally:
            probe.close()
        self.router = support.Cortexd("--role", "router", "--workers", "%s.2:%d" % (self.net, port), *tls).start()
        case = support.golden_cases()[0]
        text, fin = self.router.client().submit(prompt=case["prompt"], max_tokens=case["n_gen"], temperature=0).result()
        self.assertEqual(text, case["text"])
        self.assertEqual(self.router.stop(), 0, self.router.log())
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.proc.wait(30), 0)
        log.close()


if __name__ == "__main__":
    unittest.main()
