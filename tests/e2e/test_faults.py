"""Fault injection (issue 11 part 4): cortexd started with CORTEX_FAULTS
(actors/runtime/fault_plan.hpp) ends exactly the requests a fault hits,
with a clear error (or client_gone for a failed send), keeps every other
request intact, and keeps serving: a request after the fault succeeds and
the engine returns to idle."""

import json
import time
import unittest
import urllib.request

import msgpack
import zmq

from tests.e2e import http_support, support

PROMPT = "Once upon a time"


class FaultServer(support.Cortexd):
    """A cortexd with CORTEX_FAULTS set. Readiness is polled over HTTP so
    that no ZeroMQ send happens before the test's own (send_fail counts
    them)."""

    def __init__(self, faults, *args):
        super().__init__(*args, env={"CORTEX_FAULTS": faults})

    def _wait_ready(self):
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.http + "/health/ready", timeout=0.5) as r:
                    if r.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.02)
        return False


class Conn:
    """A raw DEALER: submits, and collects each request's messages up to
    its terminal, checking seq is contiguous from 0."""

    def __init__(self, endpoint):
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.msgs = {}

    def send(self, m):
        self.sock.send(msgpack.packb(m, use_bin_type=True))

    def submit(self, rid, max_tokens, **extra):
        m = {"v": 1, "t": "submit", "id": rid, "prompt": PROMPT,
             "params": {"temperature": 0.0, "max_tokens": max_tokens, "ignore_eos": True}}
        m.update(extra)
        self.send(m)
        self.msgs[rid] = []

    def recv(self, timeout_s):
        if not self.sock.poll(int(timeout_s * 1000)):
            return None
        m = msgpack.unpackb(self.sock.recv_multipart()[-1], raw=False)
        if m.get("id") in self.msgs and m.get("t") in ("accepted", "chunk", "finished", "error"):
            got = self.msgs[m["id"]]
            if got and got[-1]["t"] in ("finished", "error"):
                raise AssertionError("message after the terminal: %r" % m)
            if m.get("seq") != len(got):
                raise AssertionError("seq %r, want %d: %r" % (m.get("seq"), len(got), m))
            got.append(m)
        return m

    def wait(self, ids, timeout_s=60.0):
        """The terminal message of each id (dict id -> message)."""
        deadline = time.monotonic() + timeout_s
        while not all(self.msgs[i] and self.msgs[i][-1]["t"] in ("finished", "error") for i in ids):
            if self.recv(max(0.0, deadline - time.monotonic())) is None:
                raise AssertionError("no terminal for %s within %.0f s: %r" % (ids, timeout_s, self.msgs))
        return {i: self.msgs[i][-1] for i in ids}

    def text(self, rid):
        return "".join(m.get("text") or "" for m in self.msgs[rid] if m["t"] in ("chunk", "finished"))

    def request(self, m, timeout_s=10.0):
        self.send(m)
        deadline = time.monotonic() + timeout_s
        while True:
            r = self.recv(max(0.0, deadline - time.monotonic()))
            if r is None:
                raise AssertionError("no reply to %r" % m)
            if r.get("t") == m["t"]:
                return r

    def close(self):
        self.sock.close()


class FaultCase(unittest.TestCase):
    FAULTS = ""
    ARGS = ()

    def setUp(self):
        self.server = FaultServer(self.FAULTS, *self.ARGS).start()
        self.conns = []

    def tearDown(self):
        for c in self.conns:
            c.close()
        try:
            code = self.server.stop()
            self.assertEqual(code, 0, self.server.log())
        finally:
            self.server.close()

    def conn(self):
        c = Conn(self.server.endpoint)
        self.conns.append(c)
        return c

    def assert_serves_and_idles(self, c, rid="after", max_tokens=12, kv_used=0):
        """A following request succeeds, and the engine returns to idle."""
        c.submit(rid, max_tokens)
        fin = c.wait([rid])[rid]
        self.assertEqual((fin["t"], fin.get("reason")), ("finished", "length"), fin)
        self.assertEqual(fin["usage"]["completion_tokens"], max_tokens)
        deadline = time.monotonic() + 10
        while True:
            st = c.request({"v": 1, "t": "stats"})
            if (st["running"], st["waiting"], st["kv_blocks_used"]) == (0, 0, kv_used):
                return st
            if time.monotonic() > deadline:
                self.fail("engine not idle: %r" % st)
            time.sleep(0.05)

    def assert_internal_error(self, fin, words):
        """A request that ended with an error: `finished` with reason error
        and an `error` map (code 500) whose message says what failed."""
        self.assertEqual((fin["t"], fin.get("reason")), ("finished", "error"), fin)
        err = fin.get("error") or {}
        self.assertEqual((err.get("code"), err.get("name")), (500, "internal"), fin)
        self.assertIn(words, err.get("message", ""))


class ExecutorStepFailure(FaultCase):
    # Step 3 fails. "short" (2 tokens) is done by step 2 whatever the
    # arrival order; "long" is in step 3 and ends with the error.
    FAULTS = "executor_fail=3"

    def test_the_failed_step_ends_its_requests_only(self):
        c = self.conn()
        c.submit("short", 2)
        c.submit("long", 30)
        fins = c.wait(["short", "long"])
        self.assertEqual(fins["short"].get("reason"), "length", fins)
        self.assert_internal_error(fins["long"], "executor failed the step")
        st = self.assert_serves_and_idles(c)
        self.assertEqual(st["requests_finished"]["error"], 1, st)


class ExecutorStepFailureHttp(FaultCase):
    # Over HTTP the failed request is a 500 naming the failure (a final
    # error event when streaming, http.md); the next request is served.
    FAULTS = "executor_fail=2"

    def test_the_failed_step_is_a_500_and_the_next_request_succeeds(self):
        body = {"prompt": PROMPT, "max_tokens": 12, "temperature": 0, "ignore_eos": True}
        status, _, raw = http_support.request(self.server.http, "POST", "/v1/completions",
                                              json.dumps(body).encode(), {"Content-Type": "application/json"})
        self.assertEqual(status, 500, raw)
        err = json.loads(raw)["error"]
        self.assertEqual((err["type"], err["code"]), ("server_error", "internal"), err)
        self.assertIn("executor failed the step", err["message"])
        status, _, raw = http_support.request(self.server.http, "POST", "/v1/completions",
                                              json.dumps(body).encode(), {"Content-Type": "application/json"})
        self.assertEqual(status, 200, raw)
        self.assertEqual(json.loads(raw)["choices"][0]["finish_reason"], "length")


class ExecutorStall(FaultCase):
    # Step 2 hangs for 3 s: health, deadlines and cancels of queued requests
    # are served during it; the request in the step completes correctly.
    FAULTS = "executor_stall=2:3000"

    def test_a_stalled_executor_delays_but_does_not_block_the_server(self):
        c = self.conn()
        t0 = time.monotonic()
        c.submit("stalled", 8)
        while not c.msgs["stalled"] or c.msgs["stalled"][-1]["t"] != "chunk":  # step 1 done: step 2 is stalling
            self.assertIsNotNone(c.recv(10), "no first chunk")
        c.submit("deadline", 8, deadline_ms=300)
        c.submit("cancelled", 8)
        c.send({"v": 1, "t": "cancel", "id": "cancelled"})
        h0 = time.monotonic()
        self.assertEqual(c.request({"v": 1, "t": "health"}, timeout_s=1.0)["status"], "ready")
        self.assertLess(time.monotonic() - h0, 1.0)
        fins = c.wait(["deadline", "cancelled"], timeout_s=2.0)  # before the stall ends
        self.assertLess(time.monotonic() - t0, 2.5)
        self.assertEqual(fins["deadline"].get("reason"), "deadline", fins)
        self.assertEqual(fins["cancelled"].get("reason"), "cancelled", fins)
        fin = c.wait(["stalled"])["stalled"]
        self.assertGreaterEqual(time.monotonic() - t0, 3.0)
        self.assertEqual(fin.get("reason"), "length", fin)
        self.assert_serves_and_idles(c, rid="again", max_tokens=8)
        self.assertEqual(c.text("stalled"), c.text("again"))


class KvPoolExhausted(FaultCase):
    # 16 blocks of 16 tokens, 12 pinned: 64 tokens free while the context
    # (from the whole pool) allows 256. "big" cannot fit even alone.
    FAULTS = "kv_pin=12"
    ARGS = ("--kv-blocks", "16")

    def test_a_request_the_pool_cannot_hold_ends_and_others_go_on(self):
        c = self.conn()
        c.submit("big", 200)
        c.submit("small", 20)
        fins = c.wait(["big", "small"])
        self.assert_internal_error(fins["big"], "more KV blocks than the pool holds")
        self.assertEqual(fins["small"].get("reason"), "length", fins)
        self.assertEqual(fins["small"]["usage"]["completion_tokens"], 20)
        self.assert_serves_and_idles(c, kv_used=12)


class SendFailsHostUnreachable(FaultCase):
    # The third send (the second chunk of "lost") fails as if the peer had
    # left: its requests end with client_gone; other clients are untouched.
    FAULTS = "send_fail=3:EHOSTUNREACH"

    def test_a_failed_send_ends_that_peers_requests_only(self):
        lost = self.conn()
        lost.submit("lost", 200)
        while len(lost.msgs["lost"]) < 2:  # sends 1 and 2: accepted, the first chunk
            self.assertIsNotNone(lost.recv(10), lost.msgs)
        time.sleep(0.3)  # the next step's chunk is send 3 (before any reply to `other`)
        deadline = time.monotonic() + 10
        other = self.conn()
        while True:  # the failure is seen at the third send; then that peer's request ends
            st = other.request({"v": 1, "t": "stats"})
            if st["requests_finished"]["client_gone"] == 1 and st["running"] == 0:
                break
            self.assertLess(time.monotonic(), deadline, st)
            time.sleep(0.05)
        while lost.recv(0.5) is not None:  # what was sent before the failure (seq checked)
            pass
        got = [m["t"] for m in lost.msgs["lost"]]
        self.assertEqual(got, ["accepted", "chunk"], lost.msgs)  # the third send failed: nothing after it
        self.assert_serves_and_idles(other)
        # The client that was taken for gone is served again when it talks.
        self.assert_serves_and_idles(lost, rid="back")


class SendFailsAgain(FaultCase):
    # EAGAIN on the third send: the frame waits in the gateway's queue and
    # goes out later; nothing is lost, seq stays contiguous.
    FAULTS = "send_fail=3:EAGAIN"

    def test_a_send_that_would_block_loses_nothing(self):
        c = self.conn()
        c.submit("again", 40)
        fin = c.wait(["again"])["again"]
        self.assertEqual(fin.get("reason"), "length", fin)
        self.assertEqual(fin["usage"]["completion_tokens"], 40)
        self.assert_serves_and_idles(c, rid="ref", max_tokens=40)
        self.assertEqual(c.text("again"), c.text("ref"))


class SessionDies(FaultCase):
    # The session of request 2 throws on its first update: that request
    # ends with error internal; requests 1 and 3 are untouched.
    FAULTS = "session_crash=2"

    def test_a_dead_session_ends_its_request_with_an_error(self):
        c = self.conn()
        c.submit("first", 20)
        self.assertEqual(c.recv(10)["t"], "accepted")  # rid 1 admitted first
        c.submit("victim", 20)
        c.submit("third", 20)
        fins = c.wait(["first", "victim", "third"])
        self.assertEqual(fins["first"].get("reason"), "length", fins)
        self.assertEqual(fins["third"].get("reason"), "length", fins)
        self.assert_internal_error(fins["victim"], "session failed")
        self.assertEqual(c.text("first"), c.text("third"))
        self.assert_serves_and_idles(c)


if __name__ == "__main__":
    unittest.main()
