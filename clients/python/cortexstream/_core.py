"""What Client and AsyncClient share, free of I/O: building messages,
decoding frames, routing arriving messages to requests by id, and the event
bookkeeping of a stream. Protocol v1 is ``protocol.md`` in the shared docs."""

from __future__ import annotations

import collections
import itertools
import os
from typing import Any, Deque, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

import msgpack
import zmq
from zmq.utils import z85

from .errors import CortexError, CortexTimeout, ProtocolViolation

PROTOCOL_VERSION = 1

#: Terminal message types: after one of these a request receives nothing more.
TERMINAL_TYPES = ("finished", "error")

#: A decoded protocol message (a msgpack map).
Message = Dict[str, Any]

# Sampling parameters that the protocol types as float; submit() sends them as
# floats even when given as Python ints (temperature=0 means 0.0).
_FLOAT_PARAMS = frozenset(
    ["temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty"])


#: A CURVE key as Z85 text (40 characters), str or bytes.
Key = Union[str, bytes]


def _z85_key(key: Key, what: str) -> bytes:
    """``key`` as 40 Z85 bytes; ValueError naming ``what`` otherwise (the
    key itself is never echoed: it may be a secret)."""
    raw = key.encode("ascii", "replace") if isinstance(key, str) else bytes(key)
    raw = raw.strip()
    try:
        ok = len(raw) == 40 and len(z85.decode(raw)) == 32
    except Exception:
        ok = False
    if not ok:
        raise ValueError("%s must be a CURVE key in Z85 (40 characters, as 'cortex keys curve' writes)" % what)
    return raw


def read_curve_key(path: str) -> str:
    """The Z85 key in a key file written by ``cortex keys curve --out NAME``
    (``NAME.pub`` or ``NAME.key``). Raises ValueError if it holds none."""
    with open(path, "rb") as f:
        return _z85_key(f.read(), "the content of %s" % path).decode("ascii")


def curve_options(server_key: Optional[Key], public_key: Optional[Key],
                  secret_key: Optional[Key]) -> Optional[Tuple[bytes, bytes, bytes]]:
    """(server, public, secret) Z85 keys for a CURVE client, or None for
    plaintext (no key given). ``public_key`` may be left out: it is derived
    from ``secret_key``; when given it must match. Raises ValueError."""
    if server_key is None and public_key is None and secret_key is None:
        return None
    if server_key is None or secret_key is None:
        raise ValueError("CURVE needs server_key (the server's public key) and secret_key "
                         "(with public_key, this client's pair); give all or none")
    server = _z85_key(server_key, "server_key")
    secret = _z85_key(secret_key, "secret_key")
    derived = zmq.curve_public(secret)
    if public_key is not None and _z85_key(public_key, "public_key") != derived:
        raise ValueError("public_key is not the public half of secret_key")
    return server, derived, secret


def open_dealer(ctx: zmq.Context, endpoint: str, curve: Optional[Tuple[bytes, bytes, bytes]],
                timeout_s: float) -> zmq.Socket:
    """A DEALER connected to ``endpoint`` (a CURVE client when ``curve`` is
    set: the options must precede connect). Works for zmq.asyncio contexts
    too: nothing here waits. A send waits at most ``timeout_s`` (then
    zmq.Again, see :func:`send_timeout`): with no connection to queue on,
    e.g. after the server refused a CURVE handshake, it would wait forever."""
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDTIMEO, max(1, int(timeout_s * 1000)))
    if curve is not None:
        sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = curve
    sock.connect(endpoint)
    return sock


def send_timeout(endpoint: str, timeout_s: float) -> CortexTimeout:
    """The error for a send that found no connection within the timeout."""
    return CortexTimeout("cannot send to %s within %.1f s: no connection (is cortexd running there, and does it "
                         "accept this client's CURVE key?)" % (endpoint, timeout_s))


def encode(msg: Union[Mapping[str, Any], bytes, bytearray]) -> bytes:
    """A dict packed with msgpack; ``bytes`` unchanged (for tests that send
    malformed input)."""
    if isinstance(msg, (bytes, bytearray)):
        return bytes(msg)
    return msgpack.packb(msg, use_bin_type=True)


def decode_frames(frames: Sequence[bytes]) -> Message:
    """The message of one received multipart (a mirrored empty delimiter may
    precede the payload). Raises :class:`ProtocolViolation`."""
    data = frames[-1]
    try:
        m = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as e:
        raise ProtocolViolation("server sent a frame that is not msgpack: %r" % (e,))
    if not isinstance(m, dict):
        raise ProtocolViolation("server sent %s, not a map" % type(m).__name__)
    return m


def build_submit(id: str, prompt: Optional[str] = None, tokens: Optional[Iterable[int]] = None,
                 messages: Optional[Sequence[Mapping[str, Any]]] = None,
                 chat_template_kwargs: Optional[Mapping[str, Any]] = None,
                 add_generation_prompt: Optional[bool] = None, stream: bool = True, priority: int = 0,
                 deadline_ms: Optional[int] = None, want_token_ids: bool = False, logprobs: int = 0,
                 tags: Optional[Mapping[str, str]] = None, add_bos: Optional[bool] = None,
                 extra: Optional[Mapping[str, Any]] = None, auth: Optional[str] = None, **params: Any) -> Message:
    """The ``submit`` message (see :meth:`Client.submit` for the arguments;
    ``auth``: the client's API key, sent as the protocol's ``auth``).
    Nothing is validated here: the server says what is wrong."""
    m: Message = {"v": PROTOCOL_VERSION, "t": "submit", "id": id}
    if auth is not None:
        m["auth"] = auth
    if prompt is not None:
        m["prompt"] = prompt
    if tokens is not None:
        m["tokens"] = list(tokens)
    if messages is not None:
        m["messages"] = [dict(turn) for turn in messages]
    if chat_template_kwargs is not None:
        m["chat_template_kwargs"] = dict(chat_template_kwargs)
    if add_generation_prompt is not None:
        m["add_generation_prompt"] = bool(add_generation_prompt)
    if add_bos is not None:
        m["add_bos"] = bool(add_bos)
    if not stream:
        m["stream"] = False
    if priority:
        m["priority"] = int(priority)
    if deadline_ms is not None:
        m["deadline_ms"] = int(deadline_ms)
    want: Dict[str, Any] = {}
    if want_token_ids:
        want["token_ids"] = True
    if logprobs:
        want["logprobs"] = int(logprobs)
    if want:
        m["want"] = want
    if tags:
        m["tags"] = dict(tags)
    p: Dict[str, Any] = {}
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
    return m


def cancel_message(ids: Union[str, Iterable[str]]) -> Message:
    if isinstance(ids, str):
        return {"v": PROTOCOL_VERSION, "t": "cancel", "id": ids}
    return {"v": PROTOCOL_VERSION, "t": "cancel", "ids": list(ids)}


def ping_message(nonce: Any = None) -> Message:
    m: Message = {"v": PROTOCOL_VERSION, "t": "ping"}
    if nonce is not None:
        m["nonce"] = nonce
    return m


class Router:
    """Buffers of one connection: per tracked request id a queue of its
    messages, and the messages that belong to no tracked request (replies,
    errors, raw traffic) in arrival order."""

    def __init__(self) -> None:
        self.by_id: Dict[str, Deque[Message]] = {}
        self.other: Deque[Message] = collections.deque()
        self._accepted: Set[str] = set()
        self._ids = itertools.count(1)
        self._id_prefix = "py%d-%x-" % (os.getpid(), id(self) & 0xFFFFFF)

    def new_id(self, id: Optional[str]) -> str:
        """``id``, or a fresh one unique on this connection. Raises
        ValueError when ``id`` is still active here."""
        if id is None:
            return self._id_prefix + str(next(self._ids))
        if id in self.by_id:
            raise ValueError("request id %r is still active on this client" % (id,))
        return id

    def open(self, id: str) -> None:
        """Starts keeping ``id``'s messages (a request about to be sent)."""
        self.by_id.setdefault(id, collections.deque())

    def track(self, id: str) -> None:
        """Starts keeping ``id``'s messages; those already buffered as
        "other" move into its queue."""
        self.open(id)
        pending, self.other = self.other, collections.deque()
        for m in pending:
            if not self.route(m):
                self.other.append(m)

    def untrack(self, id: str) -> None:
        self._accepted.discard(id)
        q = self.by_id.pop(id, None)
        if q:  # messages after a terminal one: keep them visible to recv()
            self.other.extend(q)

    def route(self, m: Message) -> bool:
        """Files m under its tracked request; False if nobody tracks it.

        An error with ``terminal: false`` (protocol.md) rejects another
        message naming the id (a duplicate submit, a malformed cancel), not
        that request's end: left to recv(). So is a 409 for an id whose
        request was accepted (servers before the ``terminal`` flag).
        """
        id = m.get("id")
        q = self.by_id.get(id) if isinstance(id, str) else None
        if q is None:
            return False
        t = m.get("t")
        if t == "accepted":
            self._accepted.add(id)
        elif t == "error" and (m.get("terminal") is False or (m.get("code") == 409 and id in self._accepted)):
            return False
        q.append(m)
        return True

    def deliver(self, m: Message) -> None:
        """Routes m, or keeps it as "other"."""
        if not self.route(m):
            self.other.append(m)

    def pop_for(self, id: str) -> Optional[Message]:
        q = self.by_id.setdefault(id, collections.deque())
        return q.popleft() if q else None

    def pop_other(self) -> Optional[Message]:
        return self.other.popleft() if self.other else None

    def take_other(self) -> List[Message]:
        """Every "other" message, removed from the buffer."""
        taken, self.other = list(self.other), collections.deque()
        return taken

    def pop_reply(self, reply_type: str) -> Optional[Message]:
        """The first buffered message of ``reply_type`` or id-less ``error``
        (raised as :class:`CortexError`), or None."""
        for i, m in enumerate(self.other):
            t = m.get("t")
            if t == reply_type or (t == "error" and m.get("id") is None):
                del self.other[i]
                if t == "error":
                    raise CortexError.from_reply(m)
                return m
        return None


class StreamState:
    """The events of one request seen so far: ``events`` (all),
    ``accepted``, ``finished``, ``error`` (or None) and ``done``."""

    def __init__(self, id: str) -> None:
        self.id = id
        self.events: List[Message] = []
        self.accepted: Optional[Message] = None
        self.finished: Optional[Message] = None
        self.error: Optional[Message] = None
        self.done = False

    def _record(self, m: Message) -> bool:
        """Notes one event; True when it was the terminal one."""
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
        return self.done

    def _chunk_texts(self) -> List[str]:
        return [m.get("text", "") or "" for m in self.events if m.get("t") == "chunk"]

    def _final_text(self, parts: List[str]) -> str:
        """All text, once the stream has ended; raises its error."""
        if self.error is not None:
            raise CortexError.from_reply(self.error)
        assert self.finished is not None
        parts.append(self.finished.get("text", "") or "")
        return "".join(parts)
