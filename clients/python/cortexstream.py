#!/usr/bin/python3
"""Python client for cortexd, the CortexStream inference server.

Speaks wire protocol version 1 (``docs/protocol.md`` in the shared docs): one
ZeroMQ DEALER connection per :class:`Client`, one msgpack map per message.
Needs only Debian's ``python3-zmq`` and ``python3-msgpack``; run it with
``/usr/bin/python3`` (a pyenv ``python3`` on PATH may lack those packages).

Example::

    from cortexstream import Client

    with Client("tcp://127.0.0.1:5555", timeout_s=30) as c:
        for ev in c.submit(prompt="Once upon a time", max_tokens=64, temperature=0):
            if ev["t"] == "chunk":
                print(ev["text"], end="", flush=True)
        text, finished = c.complete(prompt="Once upon a time", max_tokens=64)

Several requests may be in flight on one client: messages are routed by
request id and buffered until the caller reads them, so their streams may be
consumed in any order. A Client is not thread-safe (neither is a ZeroMQ
socket): use one Client per thread.

Command line::

    /usr/bin/python3 clients/python/cortexstream.py --endpoint tcp://127.0.0.1:5555 "Once upon a time"
"""

import collections
import itertools
import os
import sys
import time

import msgpack
import zmq

PROTOCOL_VERSION = 1

#: Terminal message types: after one of these a request receives nothing more.
TERMINAL_TYPES = ("finished", "error")

# Sampling parameters that the protocol types as float; submit() sends them as
# floats even when given as Python ints (temperature=0 means 0.0).
_FLOAT_PARAMS = frozenset(
    ["temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty"])


class CortexError(Exception):
    """An ``error`` reply from the server.

    Attributes: ``code`` (HTTP-like uint, e.g. 400), ``name`` (e.g.
    ``invalid_param``), ``message`` (what to fix), ``retryable`` (bool),
    ``retry_after_ms`` (or None), ``id`` (request id, or None for
    connection-level errors) and ``reply`` (the whole decoded message).
    """

    def __init__(self, code, name, message, retryable=False, retry_after_ms=None, id=None, reply=None):
        super().__init__("%s %s: %s" % (code, name, message))
        self.code = code
        self.name = name
        self.message = message
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms
        self.id = id
        self.reply = reply

    @classmethod
    def from_reply(cls, m):
        """Builds the exception from a decoded ``error`` message."""
        return cls(m.get("code"), m.get("name"), m.get("message"), bool(m.get("retryable", False)),
                   m.get("retry_after_ms"), m.get("id"), m)


class CortexTimeout(TimeoutError):
    """No expected message arrived within the client's ``timeout_s``."""


class ProtocolViolation(Exception):
    """The server sent something protocol v1 does not allow (not a msgpack map)."""


class Stream:
    """The events of one request, in order: ``accepted``, ``chunk``\\*, then
    exactly one terminal ``finished`` or ``error`` (a rejected submit yields
    only the ``error``).

    Iterating yields each event as the decoded dict (``ev["t"]`` is its type)
    and stops after the terminal one. Error events are yielded, not raised; use
    :meth:`result` or :meth:`Client.complete` to get a :class:`CortexError`.
    After the stream ends, ``accepted``, ``finished`` and ``error`` hold those
    messages (or None) and ``events`` holds every event seen.
    """

    def __init__(self, client, id):
        self.client = client
        self.id = id
        self.events = []
        self.accepted = None
        self.finished = None
        self.error = None
        self.done = False

    def __iter__(self):
        return self

    def __next__(self):
        if self.done:
            raise StopIteration
        m = self.client._next_for(self.id)
        t = m.get("t")
        self.events.append(m)
        if t == "accepted":
            self.accepted = m
        elif t == "finished":
            self.finished = m
        elif t == "error":
            self.error = m
        if t in TERMINAL_TYPES:
            self.done = True
            self.client._untrack(self.id)
        return m

    def cancel(self):
        """Asks the server to cancel this request; its stream then ends with
        ``finished`` reason ``cancelled`` (unless it had already ended)."""
        self.client.cancel(self.id)

    def result(self):
        """Reads the stream to its end and returns ``(text, finished)``: all
        chunk texts plus the finished message's remaining text. Raises
        :class:`CortexError` if the request ended with an ``error``."""
        parts = [m.get("text", "") for m in self.events if m.get("t") == "chunk"]
        for m in self:
            if m.get("t") == "chunk":
                parts.append(m.get("text", ""))
        if self.error is not None:
            raise CortexError.from_reply(self.error)
        parts.append(self.finished.get("text", "") or "")
        return "".join(parts), self.finished


class Client:
    """One DEALER connection to cortexd.

    ``endpoint``: a ZeroMQ endpoint such as ``tcp://127.0.0.1:5555`` or
    ``ipc:///tmp/cortex.sock``. ``timeout_s``: the longest any call waits for
    one expected message before raising :class:`CortexTimeout`. The socket
    connects lazily (ZeroMQ reconnects by itself); close it with
    :meth:`close` or a ``with`` block.
    """

    def __init__(self, endpoint="tcp://127.0.0.1:5555", timeout_s=30.0, context=None):
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self._ctx = context or zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.connect(endpoint)
        self._by_id = {}                       # tracked request id -> deque of its messages
        self._other = collections.deque()      # messages for nobody tracked (replies, raw traffic)
        self._accepted = set()                 # tracked ids whose accepted has arrived
        self._ids = itertools.count(1)
        self._id_prefix = "py%d-%x-" % (os.getpid(), id(self) & 0xFFFFFF)

    # -- lifecycle ---------------------------------------------------------

    def close(self):
        """Closes the connection at once; the server cancels this client's
        requests when it notices the peer is gone."""
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- raw access --------------------------------------------------------

    def send(self, msg):
        """Sends one message as is: a dict is packed with msgpack, ``bytes``
        go out unchanged (for tests that send malformed input). Adds nothing,
        not even ``v``."""
        data = msg if isinstance(msg, (bytes, bytearray)) else msgpack.packb(msg, use_bin_type=True)
        self._sock.send(data)

    def recv(self, timeout_s=None):
        """Returns the next message that belongs to no tracked request (a
        reply, an error, or traffic of a request sent with :meth:`send`), in
        arrival order. Raises :class:`CortexTimeout`."""
        if self._other:
            return self._other.popleft()
        deadline = self._deadline(timeout_s)
        while True:
            m = self._read(deadline)
            if not self._route(m):
                return m

    def track(self, id):
        """Returns a :class:`Stream` for a request submitted with
        :meth:`send`; messages for ``id`` already buffered are moved into it."""
        self._by_id.setdefault(id, collections.deque())
        pending, self._other = self._other, collections.deque()
        for m in pending:
            if not self._route(m):
                self._other.append(m)
        return Stream(self, id)

    def pending(self):
        """Buffered messages that belong to no tracked request (for tests)."""
        return list(self._other)

    # -- requests ----------------------------------------------------------

    def submit(self, prompt=None, tokens=None, id=None, stream=True, priority=0, deadline_ms=None,
               want_token_ids=False, logprobs=0, tags=None, add_bos=None, extra=None, **params):
        """Submits one request and returns its :class:`Stream` at once.

        Give exactly one of ``prompt`` (str) or ``tokens`` (list of ids).
        ``id`` defaults to a fresh id unique on this client; an id whose
        stream has not ended raises ValueError (use :meth:`send` to provoke
        the server's 409). ``stream=False``
        asks for only ``accepted`` and a ``finished`` holding all the text.
        ``want_token_ids`` / ``logprobs`` (0..20) add ``token_ids`` /
        ``logprobs`` to chunks. ``tags`` (str -> str) are echoed back.
        Keyword ``params`` are the sampling parameters of the protocol
        (``max_tokens``, ``temperature``, ``top_k``, ``top_p``, ``min_p``,
        ``seed``, ``stop``, ``stop_token_ids``, ``ignore_eos``,
        ``min_tokens``, ``logit_bias``, penalties...); float-typed ones are
        sent as floats. ``extra`` adds top-level keys verbatim.
        """
        if id is None:
            id = self._id_prefix + str(next(self._ids))
        elif id in self._by_id:
            raise ValueError("request id %r is still active on this client" % (id,))
        m = {"v": PROTOCOL_VERSION, "t": "submit", "id": id}
        if prompt is not None:
            m["prompt"] = prompt
        if tokens is not None:
            m["tokens"] = list(tokens)
        if add_bos is not None:
            m["add_bos"] = bool(add_bos)
        if not stream:
            m["stream"] = False
        if priority:
            m["priority"] = int(priority)
        if deadline_ms is not None:
            m["deadline_ms"] = int(deadline_ms)
        want = {}
        if want_token_ids:
            want["token_ids"] = True
        if logprobs:
            want["logprobs"] = int(logprobs)
        if want:
            m["want"] = want
        if tags:
            m["tags"] = dict(tags)
        p = {}
        for k, val in params.items():
            if val is None:
                continue
            if k in _FLOAT_PARAMS and isinstance(val, int) and not isinstance(val, bool):
                val = float(val)
            if k == "logit_bias":
                val = {int(t): float(b) for t, b in val.items()}
            p[k] = val
        if p:
            m["params"] = p
        if extra:
            m.update(extra)
        self._by_id.setdefault(id, collections.deque())
        try:
            self.send(m)
        except Exception:
            self._untrack(id)
            raise
        return Stream(self, id)

    def complete(self, prompt=None, tokens=None, **kw):
        """Submits and waits: returns ``(text, finished)`` with all generated
        text. Raises :class:`CortexError` if the request is rejected or ends
        with an error. Takes the same arguments as :meth:`submit`."""
        return self.submit(prompt=prompt, tokens=tokens, **kw).result()

    def cancel(self, ids):
        """Cancels one id (str) or several (list). Unknown ids are ignored by
        the server; each cancelled request's stream ends with ``finished``
        reason ``cancelled``. Returns at once (no reply of its own)."""
        if isinstance(ids, str):
            self.send({"v": PROTOCOL_VERSION, "t": "cancel", "id": ids})
        else:
            self.send({"v": PROTOCOL_VERSION, "t": "cancel", "ids": list(ids)})

    # -- connection-level calls ------------------------------------------------

    def ping(self, nonce=None):
        """Round trip; returns the ``pong`` (``nonce`` echoed, ``server_time_ms``)."""
        m = {"v": PROTOCOL_VERSION, "t": "ping"}
        if nonce is not None:
            m["nonce"] = nonce
        return self._call(m, "pong")

    def stats(self):
        """Returns the server's ``stats`` map (running, waiting, kv_blocks_used...)."""
        return self._call({"v": PROTOCOL_VERSION, "t": "stats"}, "stats")

    def health(self):
        """Returns the ``health`` reply: ``status`` is starting|ready|draining."""
        return self._call({"v": PROTOCOL_VERSION, "t": "health"}, "health")

    def models(self):
        """Returns the list of loaded models (maps with name, arch, n_ctx, n_vocab...)."""
        return self._call({"v": PROTOCOL_VERSION, "t": "models"}, "models").get("models")

    # -- internals -----------------------------------------------------------

    def _call(self, msg, reply_type):
        """Sends a connection-level message and returns the first buffered or
        arriving message of ``reply_type``; an id-less ``error`` is raised."""
        self.send(msg)
        deadline = self._deadline(None)
        while True:
            for i, m in enumerate(self._other):
                t = m.get("t")
                if t == reply_type or (t == "error" and m.get("id") is None):
                    del self._other[i]
                    if t == "error":
                        raise CortexError.from_reply(m)
                    return m
            m = self._read(deadline)
            if not self._route(m):
                self._other.append(m)

    def _next_for(self, id):
        q = self._by_id.setdefault(id, collections.deque())
        deadline = self._deadline(None)
        while not q:
            m = self._read(deadline)
            if not self._route(m):
                self._other.append(m)
        return q.popleft()

    def _untrack(self, id):
        self._accepted.discard(id)
        q = self._by_id.pop(id, None)
        if q:  # messages after a terminal one: keep them visible to recv()
            self._other.extend(q)

    def _route(self, m):
        """Files m under its tracked request; False if nobody tracks it.

        A 409 for an id whose request was accepted is the rejection of a
        second submit reusing the id, not that request's end: left to recv().
        """
        id = m.get("id")
        q = self._by_id.get(id) if isinstance(id, str) else None
        if q is None:
            return False
        t = m.get("t")
        if t == "accepted":
            self._accepted.add(id)
        elif t == "error" and m.get("code") == 409 and id in self._accepted:
            return False
        q.append(m)
        return True

    def _deadline(self, timeout_s):
        return time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)

    def _read(self, deadline):
        if self._sock is None:
            raise RuntimeError("client is closed")
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self._sock.poll(max(1, int(left * 1000)), zmq.POLLIN):
                if time.monotonic() >= deadline:
                    raise CortexTimeout("no reply from %s within %.1f s" % (self.endpoint, self.timeout_s))
                continue
            frames = self._sock.recv_multipart()
            data = frames[-1]  # a mirrored empty delimiter may precede the payload
            try:
                m = msgpack.unpackb(data, raw=False, strict_map_key=False)
            except Exception as e:
                raise ProtocolViolation("server sent a frame that is not msgpack: %r" % (e,))
            if not isinstance(m, dict):
                raise ProtocolViolation("server sent %s, not a map" % type(m).__name__)
            return m


def main(argv=None):
    import argparse
    import json

    ap = argparse.ArgumentParser(description="Stream a completion from cortexd.")
    ap.add_argument("prompt")
    ap.add_argument("--endpoint", default=os.environ.get("CORTEX_ENDPOINT", "tcp://127.0.0.1:5555"))
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each message")
    ap.add_argument("--json", action="store_true", help="print each protocol message as a JSON line")
    a = ap.parse_args(argv)

    with Client(a.endpoint, timeout_s=a.timeout) as c:
        s = c.submit(prompt=a.prompt, max_tokens=a.max_tokens, temperature=a.temperature, seed=a.seed)
        try:
            for ev in s:
                if a.json:
                    print(json.dumps(ev), flush=True)
                elif ev["t"] in ("chunk", "finished"):
                    sys.stdout.write(ev.get("text", "") or "")
                    sys.stdout.flush()
        except CortexTimeout as e:
            print("\ncortexstream: %s" % e, file=sys.stderr)
            return 2
        if not a.json:
            sys.stdout.write("\n")
        if s.error is not None:
            print("cortexstream: %s" % CortexError.from_reply(s.error), file=sys.stderr)
            return 1
        return 0


if __name__ == "__main__":
    sys.exit(main())
