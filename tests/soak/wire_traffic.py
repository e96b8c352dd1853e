"""ZeroMQ traffic of the soak: one thread per WireWorker, each with its own
DEALER connection, playing random scenarios until told to stop. Every
message that arrives goes through a StreamCheck (ledger.py)."""

import os
import random
import threading
import time

import msgpack
import zmq

from tests.soak.ledger import StreamCheck, play

# Prompts of the greedy cases and the sampled traffic (stories260K's domain).
PROMPTS = ["Once upon a time", "Lily and Tom went to the park", "The little dog", "One day, a girl named Sue",
           "The sun was hot and", "Ben had a red ball"]
# (max_tokens, ignore_eos) of greedy requests; the long ones preempt in a small KV pool.
GREEDY_SHAPES = [(8, False), (40, False), (120, True), (300, True)]
TERMINAL_WAIT_S = float(os.environ.get("SOAK_TERMINAL_WAIT_S", "180"))  # a request with no terminal after this long is a violation


# Seeds of the seeded cases: temperature 1, top_k 40 and one of these seeds
# whose text must equal the same request run alone (protocol.md: the same
# seed gives the same tokens in any batch, through preemption and resume).
SEEDS = [7]


def greedy_keys():
    return [(p, n, eos) for p in PROMPTS for (n, eos) in GREEDY_SHAPES]


def seeded_keys():
    return [(p, n, eos, seed) for p in PROMPTS for (n, eos) in GREEDY_SHAPES for seed in SEEDS]


def sampling_params(key):
    """The params of a greedy key (prompt, max_tokens, ignore_eos) or a
    seeded one (the same and a seed)."""
    params = {"max_tokens": key[1], "temperature": 0.0, "ignore_eos": key[2]}
    if len(key) == 4:
        params.update(temperature=1.0, top_k=40, seed=key[3])
    return params


def pack(m):
    return msgpack.packb(m, use_bin_type=True)


def submit_message(rid, key, stream, rng, sampled=False):
    params = sampling_params(key)
    if sampled:
        params.update(temperature=1.0, top_k=40, seed=rng.randrange(1 << 30))
    m = {"v": 1, "t": "submit", "id": rid, "prompt": key[0], "params": params}
    if not stream:
        m["stream"] = False
    if rng.random() < 0.3:
        m["priority"] = rng.randint(-3, 3)
    return m


class WireWorker(threading.Thread):
    def __init__(self, name, endpoint, ledger, stop, seed, max_waiting):
        super().__init__(name=name, daemon=True)
        self.endpoint = endpoint
        self.ledger = ledger
        self.stop_event = stop
        self.rng = random.Random(seed)
        self.max_waiting = max_waiting
        self.ctx = zmq.Context.instance()
        self.n = 0
        self.non_terminal = []  # errors with terminal: false, as they arrive
        self.sock, self.check = self._connect()

    def _connect(self):
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(self.endpoint)
        return s, StreamCheck(self.ledger, self.name)

    def _id(self):
        self.n += 1
        return "%s-%d" % (self.name, self.n)

    def run(self):
        play(self.ledger, self.name, self.rng, self.stop_event,
             [(self.requests, 60), (self.disconnect, 8), (self.garbage, 8), (self.overload, 2), (self.duplicate, 4)])
        self.sock.close()

    # Reading -----------------------------------------------------------------

    def _recv(self, timeout_s):
        if not self.sock.poll(int(timeout_s * 1000)):
            return None
        frames = self.sock.recv_multipart()
        try:
            return msgpack.unpackb(frames[-1], raw=False, strict_map_key=False)
        except Exception as e:
            self.ledger.violation("%s: server sent a frame that is not msgpack: %r" % (self.name, e))
            return {}

    def _wait_terminals(self, pending, on_msg=None):
        """Reads until every id in `pending` (a dict id -> state) has its
        terminal; on_msg(m, state) sees each message of a pending id."""
        deadline = time.monotonic() + TERMINAL_WAIT_S
        while pending:
            m = self._recv(max(0.0, deadline - time.monotonic()))
            if m is None:
                self.ledger.violation("%s: no terminal within %.0f s for %s" % (
                    self.name, TERMINAL_WAIT_S, {k: dict(v, text=len(v["text"])) for k, v in pending.items()}))
                for rid in pending:  # forget them: later messages are not new violations
                    self.check.ended.add(rid)
                    self.check.next_seq.pop(rid, None)
                return
            if not isinstance(m, dict):
                self.ledger.violation("%s: server sent %r, not a map" % (self.name, m))
                continue
            terminal = self.check.on_message(m)
            if m.get("t") == "error" and m.get("terminal") is False:
                self.non_terminal.append(m)
                continue
            st = pending.get(m.get("id"))
            if st is None:
                continue
            if on_msg:
                on_msg(m, st)
            if terminal:
                self._account(m, st)
                del pending[m["id"]]

    def _account(self, m, st):
        if m["t"] == "error":
            self.ledger.outcome("error:%s" % m.get("name"))
            if m.get("name") not in ("overloaded", "draining") + tuple(st.get("expect_error", "").split("|")):
                self.ledger.violation("%s: %s ended with error %r" % (self.name, m.get("id"), m))
            return
        reason = m.get("reason")
        self.ledger.outcome(reason)
        text = "".join(st["text"]) + (m.get("text") or "")
        if reason in ("length", "stop") and not st.get("sampled"):
            self.ledger.check_reference(st["key"], text, "%s %s" % (self.name, m["id"]))
        if reason == "cancelled" and not st.get("cancel_sent"):
            self.ledger.violation("%s: %s cancelled but no cancel was sent" % (self.name, m["id"]))
        if reason == "deadline" and st.get("deadline_ms") is None:
            self.ledger.violation("%s: %s ended by deadline without one" % (self.name, m["id"]))

    # Scenarios ---------------------------------------------------------------

    def requests(self):
        """1-3 concurrent requests: streaming or not, greedy, seeded (a
        reference seed) or sampled (a random seed, unchecked), sometimes with
        a deadline, sometimes cancelled while queued (right after the
        submit), in prefill (on accepted) or in decode (after k chunks)."""
        pending = {}
        keys, seeded = greedy_keys(), seeded_keys()
        for _ in range(self.rng.randint(1, 3)):
            rid = self._id()
            key = self.rng.choice(seeded if self.rng.random() < 0.3 else keys)
            stream = self.rng.random() < 0.7
            st = {"key": key, "text": [], "sampled": self.rng.random() < 0.2, "chunks": 0}
            m = submit_message(rid, key, stream, self.rng, st["sampled"])
            if self.rng.random() < 0.1:
                st["deadline_ms"] = m["deadline_ms"] = self.rng.randint(1, 400)
            phase = self.rng.random()
            st["cancel"] = "queued" if phase < 0.07 else "prefill" if phase < 0.14 else "decode" if phase < 0.25 else None
            st["cancel_after"] = self.rng.randint(1, 6)
            self.check.submitted(rid)
            self.sock.send(pack(m))
            if st["cancel"] == "queued":
                self._cancel(rid, st)
            pending[rid] = st

        def on_msg(m, st):
            if m["t"] == "chunk":
                st["text"].append(m.get("text") or "")
                st["chunks"] += 1
            if st.get("cancel_sent"):
                return
            if (st["cancel"] == "prefill" and m["t"] == "accepted") or \
               (st["cancel"] == "decode" and st["chunks"] >= st["cancel_after"]):
                self._cancel(m["id"], st)
        self._wait_terminals(pending, on_msg)

    def _cancel(self, rid, st):
        st["cancel_sent"] = True
        if self.rng.random() < 0.5:
            self.sock.send(pack({"v": 1, "t": "cancel", "id": rid}))
        else:  # with an unknown id beside it, which is ignored
            self.sock.send(pack({"v": 1, "t": "cancel", "ids": [rid, "never-%d" % self.n]}))

    def duplicate(self):
        """A second submit with a live id: 409, not terminal, and the live
        request goes on to its normal end."""
        rid = self._id()
        key = (self.rng.choice(PROMPTS), 120, True)
        self.check.submitted(rid)
        self.sock.send(pack(submit_message(rid, key, True, self.rng)))
        pending = {rid: {"key": key, "text": [], "chunks": 0, "dup": False}}

        def on_msg(m, st):
            if m["t"] == "chunk":
                st["text"].append(m.get("text") or "")
            if m["t"] == "accepted" and not st["dup"]:
                st["dup"] = True
                self.sock.send(pack(submit_message(rid, key, True, self.rng)))
        self.non_terminal.clear()
        st = pending[rid]
        self._wait_terminals(pending, on_msg)
        if not st["dup"]:
            return  # refused (429) before its accepted: there was nothing to duplicate
        # The 409 may arrive after the terminal (a non-terminal error has no
        # seq to order it by); if the request ended before the second submit
        # arrived, that submit is a new request of its own.
        deadline = time.monotonic() + 10.0
        while not self.non_terminal and time.monotonic() < deadline:
            m = self._recv(max(0.0, deadline - time.monotonic()))
            if m is None:
                break
            if m.get("t") == "error" and m.get("terminal") is False:
                self.non_terminal.append(m)
            elif m.get("id") == rid and m.get("seq") == 0:
                self.check.ended.discard(rid)
                self.check.next_seq[rid] = 0
                self.check.on_message(m)
                self._wait_terminals({rid: {"key": key, "text": [], "chunks": 0}})
                self.ledger.outcome("dup_late")
                return
            else:
                self.check.on_message(m)
        if not self.non_terminal:
            self.ledger.violation("%s: no answer to the duplicate submit of %s" % (self.name, rid))
            return
        m = self.non_terminal.pop(0)
        if m.get("code") != 409 or m.get("id") != rid:
            self.ledger.violation("%s: duplicate submit of %s got %r" % (self.name, rid, m))
        self.ledger.outcome("dup_409")

    def disconnect(self):
        """A fresh connection submits a long request and closes abruptly
        after its accepted or a few chunks; then this worker reconnects."""
        s, _ = self._connect()
        try:
            rid = self._id()
            s.send(pack(submit_message(rid, (self.rng.choice(PROMPTS), 300, True), True, self.rng)))
            for _ in range(self.rng.randint(0, 8)):
                if not s.poll(5000):
                    break
                s.recv_multipart()
        finally:
            s.close(linger=0)
        self.ledger.outcome("disconnect")

    def garbage(self):
        """Malformed input on this live connection: random bytes, msgpack of
        the wrong shape, wrong types, unknown t, wrong v, multi-frame. Every
        one gets an error (or nothing) and never disturbs the connection."""
        rng = self.rng
        kind = rng.randrange(7)
        rid = self._id()
        if kind == 0:
            self.sock.send(bytes(rng.randrange(256) for _ in range(rng.randint(0, 200))))
        elif kind == 1:
            self.sock.send(pack([1, "submit", rid]))
        elif kind == 2:  # a submit with wrong types: a rejected request
            self.check.submitted(rid)
            self.sock.send(pack({"v": 1, "t": "submit", "id": rid, "prompt": rng.choice([5, [1.5], {"a": 1}, None])}))
            self._wait_terminals({rid: {"key": None, "text": [], "expect_error": "malformed|invalid_param"}}, None)
            return
        elif kind == 3:
            self.sock.send(pack({"v": 1, "t": "frobnicate"}))
        elif kind == 4:  # wrong v: 505, not processed (so not a request: terminal false)
            self.sock.send(pack({"v": 7, "t": "submit", "id": rid, "prompt": "x"}))
        elif kind == 5:
            self.sock.send_multipart([pack({"v": 1, "t": "ping"}), pack({"v": 1, "t": "ping"}), b"x"])
        else:
            self.sock.send(pack({"v": 1, "t": "submit", "id": rid, "prompt": "hi",
                                 "params": {"temperature": rng.choice(["hot", -1.0, 1e308])}}))
            self.check.submitted(rid)
            self._wait_terminals({rid: {"key": None, "text": [], "expect_error": "malformed|invalid_param"}}, None)
            return
        self.ledger.outcome("garbage")
        # Drain the reply (an id-less error) so it does not pile up.
        m = self._recv(2.0)
        if m is not None:
            self.check.on_message(m)

    def overload(self):
        """More submits than --max-waiting at once: some get 429 overloaded
        (terminal, seq 0); then all are cancelled."""
        pending = {}
        for _ in range(self.max_waiting + 24):
            rid = self._id()
            key = (self.rng.choice(PROMPTS), 300, True)
            self.check.submitted(rid)
            self.sock.send(pack(submit_message(rid, key, True, self.rng)))
            pending[rid] = {"key": key, "text": [], "chunks": 0, "cancel_sent": True}
        time.sleep(self.rng.uniform(0.0, 0.5))
        ids = list(pending)
        for i in range(0, len(ids), 100):
            self.sock.send(pack({"v": 1, "t": "cancel", "ids": ids[i:i + 100]}))

        def on_msg(m, st):
            if m["t"] == "chunk":
                st["text"].append(m.get("text") or "")
        self._wait_terminals(pending, on_msg)
        self.ledger.outcome("overload_burst")


class HealthProbe(threading.Thread):
    """Sends `health` every interval on its own connection; a reply slower
    than 1 s (or none) is a violation. Keeps every latency for the p99."""

    def __init__(self, endpoint, ledger, stop, interval_s=0.2):
        super().__init__(name="health", daemon=True)
        self.endpoint, self.ledger, self.stop_event, self.interval_s = endpoint, ledger, stop, interval_s
        self.latencies = []

    def run(self):
        s = zmq.Context.instance().socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(self.endpoint)
        try:
            while not self.stop_event.wait(self.interval_s):
                t0 = time.monotonic()
                s.send(pack({"v": 1, "t": "health"}))
                if not s.poll(1000):
                    self.ledger.violation("health: no reply within 1 s")
                    self.latencies.append(1.0)
                    if s.poll(30000):  # the late reply: drop it, stay in step
                        s.recv_multipart()
                    continue
                m = msgpack.unpackb(s.recv_multipart()[-1], raw=False)
                dt = time.monotonic() - t0
                self.latencies.append(dt)
                if m.get("t") != "health" or m.get("status") != "ready":
                    self.ledger.violation("health: %r" % (m,))
        finally:
            s.close()

    def p99_ms(self):
        if not self.latencies:
            return float("nan")
        xs = sorted(self.latencies)
        return 1000.0 * xs[min(len(xs) - 1, int(0.99 * len(xs)))]
