"""HTTP traffic of the soak: one thread per HttpWorker, keep-alive
completions and chat completions (streaming or not, greedy compared with
the reference), embeddings (compared with each input embedded alone),
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

# Chat greedy cases: (user message, max_tokens, ignore_eos), rendered with the
# model's template (ChatML for stories260K); the long one preempts too.
CHAT_SHAPES = [(16, False), (120, True)]
# Embedding inputs: single strings and lists of them (batched with each other
# and with the generation traffic inside the server).
EMBED_TEXTS = PROMPTS[:4]
# An embedding computed amid other work equals the input embedded alone within
# the tolerance http.md states against llama.cpp (1e-4 per component): the
# batch composition changes no row's arithmetic beyond float reordering.
EMBED_TOLERANCE = 1e-4


def chat_keys():
    return [("chat", p, n, eos) for p in PROMPTS[:3] for (n, eos) in CHAT_SHAPES]


def chat_messages(key):
    return [{"role": "user", "content": key[1]}]


def chat_references(client):
    """Every chat greedy case run alone over ZeroMQ (so HTTP's chat must
    also equal the wire's): {key: text}."""
    ref = {}
    for key in chat_keys():
        _, _, max_tokens, ignore_eos = key
        text, fin = client.complete(messages=chat_messages(key), max_tokens=max_tokens, temperature=0,
                                    ignore_eos=ignore_eos)
        if fin["reason"] not in ("length", "stop"):
            raise AssertionError("reference chat run of %r ended with %r" % (key, fin))
        ref[key] = text
    return ref


def embedding_references(base):
    """Each embedding input alone, before the traffic: {text: (vector,
    prompt_tokens)}."""
    ref = {}
    for text in EMBED_TEXTS:
        status, doc = http_support.post_json(base, "/v1/embeddings", {"input": text})
        if status != 200:
            raise AssertionError("reference embedding of %r: %d %r" % (text, status, doc))
        ref[text] = (doc["data"][0]["embedding"], doc["usage"]["prompt_tokens"])
    return ref


class HttpWorker(threading.Thread):
    def __init__(self, name, base, ledger, stop, seed, embeddings):
        super().__init__(name=name, daemon=True)
        self.base, self.ledger, self.stop_event = base, ledger, stop
        self.embeddings = embeddings  # embedding_references()
        self.host, self.port = http_support._host_port(base)
        self.rng = random.Random(seed)
        self.conn = None
        self.last_response = time.monotonic()

    def run(self):
        play(self.ledger, self.name, self.rng, self.stop_event,
             [(self.completion, 50), (self.chat, 25), (self.embed, 10), (self.hang_up, 8), (self.garbage, 7)],
             self._drop)
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
        self._generate("/v1/completions", key, self._body(key, self.rng.random() < 0.6), "http_")

    def chat(self):
        """A greedy chat completion; its text (message.content, or the
        deltas' content) must equal the same messages run alone over ZeroMQ."""
        key = self.rng.choice(chat_keys())
        _, _, max_tokens, ignore_eos = key
        body = {"messages": chat_messages(key), "max_tokens": max_tokens, "temperature": 0,
                "ignore_eos": ignore_eos, "stream": self.rng.random() < 0.6}
        if self.rng.random() < 0.3:
            body["priority"] = self.rng.randint(-3, 3)
        self._generate("/v1/chat/completions", key, body, "chat_")

    def _generate(self, path, key, body, kind):
        """POSTs a greedy generation (a tenth with a deadline) and checks its
        answer: 200 (or 429/503 refusals), the right object types, one
        finish_reason, and the reference text when it ended by length or stop."""
        chat = path.endswith("/chat/completions")
        stream = body["stream"]
        deadline = self.rng.random() < 0.1
        if deadline:
            body["deadline_ms"] = self.rng.randint(1, 400)
        where = "%s %s %r stream=%s" % (self.name, path, key, stream)
        r = self._post(path, json.dumps(body), where)
        if r is None:
            return
        if r.status == 429 or r.status == 503:
            r.read()
            self.last_response = time.monotonic()
            self.ledger.outcome("%s%d" % (kind, r.status))
            return
        if r.status != 200:
            self.ledger.violation("%s: status %d: %r" % (where, r.status, r.read()[:300]))
            return
        if not stream:
            doc = json.loads(r.read())
            want = "chat.completion" if chat else "text_completion"
            if doc.get("object") != want or len(doc.get("choices", [])) != 1:
                self.ledger.violation("%s: object %r with %d choices (want %s, 1)"
                                      % (where, doc.get("object"), len(doc.get("choices", [])), want))
                return
            choice = doc["choices"][0]
            reason = choice["finish_reason"]
            if chat:
                if choice["message"].get("role") != "assistant":
                    self.ledger.violation("%s: message %r" % (where, choice["message"]))
                text = choice["message"].get("content") or ""
            else:
                text = choice["text"]
        else:
            text, reason = self._read_sse(r, where, "chat.completion.chunk" if chat else "text_completion")
            if reason is None:
                return
        self.last_response = time.monotonic()
        self.ledger.outcome(kind + str(reason))
        if reason in ("length", "stop"):
            self.ledger.check_reference(key, text, where)
        elif reason != "deadline" or not deadline:
            self.ledger.violation("%s: finish_reason %r" % (where, reason))

    def embed(self):
        """Embeddings of one text or a list: one vector per input in order,
        unit length, each equal to that input embedded alone, and
        usage.prompt_tokens the sum of theirs."""
        texts = self.rng.sample(EMBED_TEXTS, self.rng.randint(1, len(EMBED_TEXTS)))
        single = len(texts) == 1 and self.rng.random() < 0.5
        where = "%s /v1/embeddings %r" % (self.name, texts)
        r = self._post("/v1/embeddings", json.dumps({"input": texts[0] if single else texts}), where)
        if r is None:
            return
        if r.status == 429 or r.status == 503:
            r.read()
            self.last_response = time.monotonic()
            self.ledger.outcome("embeddings_%d" % r.status)
            return
        if r.status != 200:
            self.ledger.violation("%s: status %d: %r" % (where, r.status, r.read()[:300]))
            return
        doc = json.loads(r.read())
        self.last_response = time.monotonic()
        self.ledger.outcome("embeddings_ok")
        data = doc.get("data", [])
        if doc.get("object") != "list" or [d.get("index") for d in data] != list(range(len(texts))):
            self.ledger.violation("%s: object %r, indexes %r" % (where, doc.get("object"),
                                                                 [d.get("index") for d in data]))
            return
        want_tokens = sum(self.embeddings[t][1] for t in texts)
        if doc.get("usage", {}).get("prompt_tokens") != want_tokens:
            self.ledger.violation("%s: usage %r, want prompt_tokens %d" % (where, doc.get("usage"), want_tokens))
        for t, d in zip(texts, data):
            self.ledger.check_embedding(t, self.embeddings[t][0], d.get("embedding"), EMBED_TOLERANCE, where)

    def _post(self, path, payload, where):
        """The response to a POST of `path` on the kept-alive
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
                self.conn.request("POST", path, payload, {"Content-Type": "application/json"})
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

    def _read_sse(self, r, where, obj):
        """Text and finish_reason of an SSE completion: events of object
        `obj`, exactly one with a finish_reason, then [DONE], then the end of
        the response. A chat stream's text is its deltas' content."""
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
            if ev.get("object") != obj:
                self.ledger.violation("%s: event object %r, want %s" % (where, ev.get("object"), obj))
            for c in ev.get("choices", []):
                if reason is not None:
                    self.ledger.violation("%s: event after the finish_reason: %r" % (where, ev))
                text.append((c.get("delta", {}).get("content") if "delta" in c else c.get("text")) or "")
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
