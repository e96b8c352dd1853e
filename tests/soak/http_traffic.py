"""HTTP traffic of the soak: one thread per HttpWorker, keep-alive
completions (streaming or not, greedy compared with the reference),
connections closed mid-stream, and garbage request heads."""

import http.client
import json
import random
import socket
import threading
import time

from tests.e2e import http_support
from tests.soak.ledger import play
from tests.soak.wire_traffic import PROMPTS, greedy_keys


class HttpWorker(threading.Thread):
    def __init__(self, name, base, ledger, stop, seed):
        super().__init__(name=name, daemon=True)
        self.base, self.ledger, self.stop_event = base, ledger, stop
        self.host, self.port = http_support._host_port(base)
        self.rng = random.Random(seed)
        self.conn = None
        self.last_response = time.monotonic()

    def run(self):
        play(self.ledger, self.name, self.rng, self.stop_event,
             [(self.completion, 80), (self.hang_up, 10), (self.garbage, 10)], self._drop)
        self._drop()

    def _drop(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _body(self, key, stream):
        prompt, max_tokens, ignore_eos = key
        b = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": ignore_eos,
             "stream": stream}
        if self.rng.random() < 0.3:
            b["priority"] = self.rng.randint(-3, 3)
        return b

    def completion(self):
        key = self.rng.choice(greedy_keys())
        stream = self.rng.random() < 0.6
        deadline = self.rng.random() < 0.1
        body = self._body(key, stream)
        if deadline:
            body["deadline_ms"] = self.rng.randint(1, 400)
        where = "%s %r stream=%s" % (self.name, key, stream)
        r = self._post(json.dumps(body), where)
        if r is None:
            return
        if r.status == 429 or r.status == 503:
            r.read()
            self.last_response = time.monotonic()
            self.ledger.outcome("http_%d" % r.status)
            return
        if r.status != 200:
            self.ledger.violation("%s: status %d: %r" % (where, r.status, r.read()[:300]))
            return
        if not stream:
            doc = json.loads(r.read())
            reason = doc["choices"][0]["finish_reason"]
            text = doc["choices"][0]["text"]
        else:
            text, reason = self._read_sse(r, where)
            if reason is None:
                return
        self.last_response = time.monotonic()
        self.ledger.outcome("http_" + str(reason))
        if reason in ("length", "stop"):
            self.ledger.check_greedy(key, text, where)
        elif reason != "deadline" or not deadline:
            self.ledger.violation("%s: finish_reason %r" % (where, reason))

    def _post(self, payload, where):
        """The response to a POST /v1/completions on the kept-alive
        connection. The server closes a connection that sends no request
        head within 10 s (http.md); a reused connection found closed that
        long after its last response is reopened and the request sent again
        (what keep-alive clients do); found closed sooner, it is a
        violation."""
        for attempt in (0, 1):
            fresh = self.conn is None
            if fresh:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=180)
            try:
                self.conn.request("POST", "/v1/completions", payload, {"Content-Type": "application/json"})
                r = self.conn.getresponse()
                return r
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected) as e:
                idle = time.monotonic() - self.last_response
                self._drop()
                if fresh or attempt or idle < 9.5:
                    self.ledger.violation("%s: connection closed by the server %.1f s after the last response: %r"
                                          % (where, idle, e))
                    return None
                self.ledger.outcome("http_idle_reconnect")
        return None

    def _read_sse(self, r, where):
        """Text and finish_reason of an SSE completion: exactly one event
        with a finish_reason, then [DONE], then the end of the response."""
        text, reason, done = [], None, False
        for raw in r:
            line = raw.decode("utf-8").rstrip("\r\n")
            if not line:
                continue
            if not line.startswith("data: "):
                self.ledger.violation("%s: SSE line %r" % (where, line))
                continue
            data = line[6:]
            if done:
                self.ledger.violation("%s: data after [DONE]: %r" % (where, data))
                continue
            if data == "[DONE]":
                done = True
                continue
            ev = json.loads(data)
            if "error" in ev:
                self.ledger.violation("%s: error event %r" % (where, ev))
                reason = "error"
                continue
            for c in ev.get("choices", []):
                if reason is not None:
                    self.ledger.violation("%s: event after the finish_reason: %r" % (where, ev))
                text.append(c.get("text") or "")
                if c.get("finish_reason"):
                    reason = c["finish_reason"]
        if not done:
            self.ledger.violation("%s: stream ended without [DONE]" % where)
        if reason is None:
            self.ledger.violation("%s: stream without a finish_reason" % where)
        return "".join(text), reason

    def hang_up(self):
        """A streaming request whose client closes after a few bytes."""
        key = (self.rng.choice(PROMPTS), 300, True)
        http_support.hang_up_mid_request(self.base, "/v1/completions", self._body(key, True),
                                         read_bytes=self.rng.choice([0, 1, 200, 2000]))
        self.ledger.outcome("http_hang_up")

    def garbage(self):
        """Random bytes or a broken head on a fresh connection: a 4xx or a
        close, never a hang (the socket's timeout bounds the wait)."""
        rng = self.rng
        junk = rng.choice([
            bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))),
            b"POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\n\r\n{]}{[",
            b"GET /v1/../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
            b"POST /v1/completions HTTP/1.1\r\nContent-Length: -4\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n"
            b'{"messages": 5, "stream": 1.5}',
        ])
        s = socket.create_connection((self.host, self.port), timeout=15)
        try:
            s.sendall(junk + b"\r\n\r\n")
            s.shutdown(socket.SHUT_WR)
            got = s.recv(65536)
            if got and not got.startswith(b"HTTP/1.1 4"):
                self.ledger.violation("%s: garbage %r answered %r" % (self.name, junk[:60], got[:80]))
        except socket.timeout:
            self.ledger.violation("%s: garbage %r: no answer nor close within 15 s" % (self.name, junk[:60]))
        except ConnectionResetError:
            pass
        finally:
            s.close()
        self.ledger.outcome("http_garbage")
