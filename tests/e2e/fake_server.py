"""A tiny in-process fake of cortexd's ROUTER side, for the Python client's
unit tests only (test_client_unit.py). It answers by protocol v1 with canned
text; it is not a model of the real server and the e2e tests never use it."""

import collections
import threading

import msgpack
import zmq


def fake_text(prompt):
    """The fake's deterministic completion of a prompt."""
    return "<" + prompt[::-1] + ">"


def fake_chat_prompt(messages):
    """The fake's stand-in for a chat template: "role:text|role:text"."""
    def text(content):
        return content if isinstance(content, str) else "".join(p["text"] for p in content)
    return "|".join("%s:%s" % (t["role"], text(t.get("content") or "")) for t in messages)


class FakeServer:
    """ROUTER on a free loopback port, served by a thread. Per peer and id it
    sends accepted, chunks of 3 characters (one message per active request per
    loop turn, so streams interleave), then finished. Chat `messages` stand
    for the prompt fake_chat_prompt makes of them. A prompt (or last chat
    turn) "forever" streams until cancelled; "reject" is refused with a 400. Records every decoded message in `received`.

    With `curve_secret_key` (Z85) it is a CURVE server whose ZAP handler
    (pyzmq's) admits every client and records its public key (Z85 str) in
    `curve_clients`."""

    def __init__(self, curve_secret_key=None):
        self.ctx = zmq.Context()
        self.curve_clients = []
        self.auth = None
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        if curve_secret_key is not None:
            from zmq.auth.thread import ThreadAuthenticator
            self.auth = ThreadAuthenticator(self.ctx)
            self.auth.start()  # bound before the ROUTER, as ZAP (RFC 27) asks
            self.auth.configure_curve_callback(domain="*", credentials_provider=self)
            self.sock.curve_server = True
            self.sock.curve_secretkey = curve_secret_key
        self.sock.bind("tcp://127.0.0.1:*")
        self.endpoint = self.sock.getsockopt(zmq.LAST_ENDPOINT).decode()
        self.received = []
        self.active = collections.OrderedDict()  # (peer, id) -> deque of outgoing events or "forever"
        self.seqs = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def callback(self, domain, client_key):
        """The ZAP credentials callback: records the key, admits it."""
        self.curve_clients.append(client_key.decode())
        return True

    def close(self):
        self._stop.set()
        self._thread.join(5)
        self.sock.close(0)
        if self.auth is not None:
            self.auth.stop()
        self.ctx.term()

    def _send(self, peer, m):
        key = (peer, m.get("id"))
        if "id" in m and m["t"] != "error":
            m["seq"] = self.seqs.get(key, 0)
            self.seqs[key] = m["seq"] + 1
        self.sock.send_multipart([peer, msgpack.packb(m, use_bin_type=True)])

    def _error(self, peer, code, name, message, id=None, **extra):
        m = {"v": 1, "t": "error", "code": code, "name": name, "message": message, "retryable": False}
        if id is not None:
            m["id"] = id
        m.update(extra)
        self._send(peer, m)

    def _run(self):
        while not self._stop.is_set():
            if self.sock.poll(5, zmq.POLLIN):
                peer, data = self.sock.recv_multipart()
                self._handle(peer, data)
            for key in list(self.active):
                peer, id = key
                q = self.active[key]
                if q == "forever":
                    self._send(peer, {"v": 1, "t": "chunk", "id": id, "text": "."})
                    continue
                self._send(peer, q.popleft())
                if not q:
                    del self.active[key]

    def _handle(self, peer, data):
        try:
            m = msgpack.unpackb(data, raw=False)
        except Exception:
            return self._error(peer, 400, "malformed", "not msgpack")
        if not isinstance(m, dict):
            return self._error(peer, 400, "malformed", "not a map")
        self.received.append(m)
        if m.get("v") != 1:
            return self._error(peer, 505, "unsupported_version", "v must be 1", id=m.get("id"), supported=[1])
        t = m.get("t")
        if t == "ping":
            return self._send(peer, {"v": 1, "t": "pong", "nonce": m.get("nonce"), "server_time_ms": 1})
        if t == "stats":
            return self._send(peer, {"v": 1, "t": "stats", "running": len(self.active), "kv_blocks_used": 0})
        if t == "health":
            return self._send(peer, {"v": 1, "t": "health", "status": "ready", "model_loaded": True})
        if t == "models":
            return self._send(peer, {"v": 1, "t": "models", "models": [{"name": "fake", "n_ctx": 64}]})
        if t == "cancel":
            ids = [m["id"]] if "id" in m else m.get("ids", [])
            for id in ids:
                if self.active.pop((peer, id), None) is not None:
                    self._send(peer, {"v": 1, "t": "finished", "id": id, "reason": "cancelled", "text": ""})
            return
        if t != "submit":
            return self._error(peer, 400, "unknown_type", "unknown t %r" % (t,), id=m.get("id"))
        id = m.get("id")
        if (peer, id) in self.active:
            return self._error(peer, 409, "duplicate_id", "id %s is active" % id, id=id)
        prompt = m.get("prompt")
        last = None  # the last turn's text, for chat messages
        if isinstance(m.get("messages"), list) and prompt is None:
            prompt = fake_chat_prompt(m["messages"])
            last = fake_chat_prompt(m["messages"][-1:]).split(":", 1)[1]
        if not isinstance(prompt, str):
            return self._error(peer, 400, "invalid_param", "prompt must be a string", id=id)
        if "reject" in (prompt, last):
            return self._error(peer, 400, "invalid_param", "the fake rejects 'reject'", id=id, terminal=True)
        known = {"v", "t", "id", "prompt", "messages", "chat_template_kwargs", "add_generation_prompt", "stream",
                 "params", "tags", "want", "priority", "deadline_ms", "auth"}
        q = collections.deque()
        q.append({"v": 1, "t": "accepted", "id": id, "rid": 7, "prompt_tokens": len(prompt),
                  "ignored": sorted(k for k in m if k not in known), "tags": m.get("tags", {})})
        self.seqs.pop((peer, id), None)
        if "forever" in (prompt, last):
            self._send(peer, q.popleft())
            self.active[(peer, id)] = "forever"
            return
        text = fake_text(prompt)
        if m.get("stream", True):
            for i in range(0, len(text), 3):
                q.append({"v": 1, "t": "chunk", "id": id, "text": text[i:i + 3]})
            q.append({"v": 1, "t": "finished", "id": id, "reason": "length", "text": "", "params": m.get("params")})
        else:
            q.append({"v": 1, "t": "finished", "id": id, "reason": "length", "text": text, "params": m.get("params")})
        self.active[(peer, id)] = q
