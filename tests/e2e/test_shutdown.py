"""Graceful shutdown of a real cortexd: on SIGTERM under load, health says
draining, new submits get 503 draining, every in-flight request ends with
exactly one terminal message (shutdown, or a natural end within the grace
period), and the process exits 0. SIGINT does the same when idle."""

import signal
import threading
import unittest

from tests.e2e import support

N_STREAMS = 16
LONG = 2000


class ShutdownTest(unittest.TestCase):
    def setUp(self):
        self.server = support.Cortexd("--grace-ms", "1500").start()

    def tearDown(self):
        self.server.close()

    def test_sigterm_under_load(self):
        srv = self.server
        clients = [srv.client(60) for _ in range(N_STREAMS)]
        streams = []
        for i, c in enumerate(clients):
            # a few short requests that may end naturally, the rest long
            n = 16 if i % 4 == 0 else LONG
            s = c.submit(prompt="Once upon a time", max_tokens=n, ignore_eos=True, temperature=0)
            self.assertEqual(next(s)["t"], "accepted")
            streams.append(s)
        for s in streams:
            if not s.done:
                next(s)  # running

        results = [None] * N_STREAMS
        errors = []

        def drain(i):
            try:
                s = streams[i]
                rest = list(s)
                results[i] = s.events
                del rest
            except BaseException as e:  # noqa: B902 (reported below)
                errors.append((i, repr(e)))

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(N_STREAMS)]
        for t in threads:
            t.start()

        srv.proc.send_signal(signal.SIGTERM)
        probe = support.cortexstream.Client(srv.endpoint, timeout_s=5)
        try:
            support.wait_until(lambda: probe.health()["status"] == "draining", 1.0, what="health draining")
            events = list(probe.submit(prompt="Once upon a time", max_tokens=4))
            self.assertEqual(len(events), 1, events)
            e = events[0]
            self.assertEqual((e["t"], e["code"], e["name"], e["retryable"]), ("error", 503, "draining", True))
        finally:
            probe.close()

        for t in threads:
            t.join(30)
        self.assertEqual(errors, [])
        reasons = []
        for events in results:
            self.assertEqual(events[0]["t"], "accepted")
            self.assertEqual([e["seq"] for e in events], list(range(len(events))))
            self.assertEqual([e["t"] for e in events].count("finished") + [e["t"] for e in events].count("error"), 1)
            self.assertEqual(events[-1]["t"], "finished", events[-1])
            reasons.append(events[-1]["reason"])
        self.assertTrue(set(reasons) <= {"shutdown", "length"}, reasons)
        self.assertIn("shutdown", reasons, "%d long streams cannot all end within the grace period" % N_STREAMS)
        self.assertEqual(srv.proc.wait(30), 0, srv.log())

    def test_sigint_when_idle_exits_0(self):
        self.assertEqual(self.server.client().complete(prompt="Once", max_tokens=4)[1]["reason"], "length")
        self.assertEqual(self.server.stop(signal.SIGINT), 0, self.server.log())


class ServerOfAFailedSetupTest(unittest.TestCase):
    """A test class whose setUpClass raises after its server started gets no
    tearDownClass from unittest: its server must still be stopped, not left
    running after the tests (support.ServerTestCase's class cleanup)."""

    def test_server_is_killed_when_the_class_setup_fails(self):
        started = []

        class FailingSetup(support.ServerTestCase):
            @classmethod
            def setUpClass(cls):
                super().setUpClass()
                started.append(cls.server)
                raise RuntimeError("setup failed after the server started")

            def test_never_runs(self):
                pass

        result = unittest.TestResult()
        unittest.defaultTestLoader.loadTestsFromTestCase(FailingSetup).run(result)
        self.assertEqual(len(result.errors), 1, result.errors)
        self.assertIn("setup failed after the server started", result.errors[0][1])
        self.assertEqual(len(started), 1)
        proc = started[0].proc
        self.assertIsNotNone(proc.poll(), "cortexd %d still running after its class setup failed" % proc.pid)


if __name__ == "__main__":
    unittest.main()
