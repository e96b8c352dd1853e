"""The sans-I/O core of the client: :class:`ClientProtocol` builds the bytes
to send, tracks the requests in flight by id, decodes received frames and
files each message under its request, and turns replies into results or
:class:`CortexError`. It owns no socket, clock, thread or event loop:
:class:`cortexstream.Client` and :class:`cortexstream.AsyncClient` move its
bytes over a ZeroMQ DEALER and wait. Protocol v1 is ``protocol.md`` in the
shared docs.

A transport drives it so::

    proto = ClientProtocol()
    id, data = proto.submit(prompt="Hi", max_tokens=8)  # send data
    state = RequestState(id)
    while not state.done:
        m = proto.next_event(state)                     # None: read a frame,
        if m is None:                                   # then ask again
            proto.receive(frames)
    text, finished = proto.result(state)
"""

from __future__ import annotations

import collections
import itertools
import os
from typing import (Any, Deque, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple,
                    Union)

import msgpack

from .errors import CortexError, ProtocolViolation

PROTOCOL_VERSION = 1

#: Terminal message types: after one of these a request receives nothing more.
TERMINAL_TYPES = ("finished", "error")

#: A decoded protocol message (a msgpack map).
Message = Dict[str, Any]

# Sampling parameters that the protocol types as float; submit() sends them as
# floats even when given as Python ints (temperature=0 means 0.0).
_FLOAT_PARAMS = frozenset(
    ["temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty"])


def encode(msg: Union[Mapping[str, Any], bytes, bytearray]) -> bytes:
    """A dict packed with msgpack; ``bytes`` unchanged (for tests that send
    malformed input)."""
    if isinstance(msg, (bytes, bytearray)):
        return bytes(msg)
    return msgpack.packb(msg, use_bin_type=True)


def decode_frames(frames: Sequence[bytes]) -> Message:
    """The message of one received multipart (a mirrored empty delimiter may
    precede the payload). Raises :class:`ProtocolViolation`."""
    try:
        m = msgpack.unpackb(frames[-1], raw=False, strict_map_key=False)
    except Exception as e:  # IndexError too: no frame at all
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
    """The ``submit`` message (see :meth:`cortexstream.Client.submit` for the
    arguments; ``auth``: the client's API key, sent as the protocol's
    ``auth``). Nothing is validated here: the server says what is wrong."""
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


def is_terminal(m: Message) -> bool:
    return m.get("t") in TERMINAL_TYPES


# -- events: what receive() made of one arriving message -----------------------


class RequestEvent(NamedTuple):
    """A message filed under the tracked request ``id``; ``terminal`` when it
    ends that request (nothing more is filed under it)."""
    id: str
    message: Message
    terminal: bool


class Unrouted(NamedTuple):
    """A message of no tracked request: a connection-level reply (``pong``,
    ``stats``...), an error without id or one that only rejected another
    message (``terminal: false``, a 409 for a live id), traffic of an id
    nobody tracks (e.g. sent raw) or of a request already ended. Kept for
    :meth:`ClientProtocol.next_unrouted` and :meth:`ClientProtocol.take_reply`."""
    message: Message


Event = Union[RequestEvent, Unrouted]


class Call(NamedTuple):
    """A connection-level request: ``data`` to send, the type of its reply,
    and the reply's field that is the result (None: the whole reply)."""
    data: bytes
    reply_type: str
    field: Optional[str] = None

    def result(self, reply: Message) -> Any:
        return reply if self.field is None else reply.get(self.field)


class RequestState:
    """The events of one request consumed so far: ``events`` (all),
    ``accepted``, ``finished``, ``error`` (or None) and ``done`` (its
    terminal event was consumed). :class:`ClientProtocol.next_event` fills it."""

    def __init__(self, id: str) -> None:
        self.id = id
        self.events: List[Message] = []
        self.accepted: Optional[Message] = None
        self.finished: Optional[Message] = None
        self.error: Optional[Message] = None
        self.done = False

    def _record(self, m: Message) -> None:
        t = m.get("t")
        self.events.append(m)
        if t == "accepted":
            self.accepted = m
        elif t == "finished":
            self.finished = m
        elif t == "error":
            self.error = m
        self.done = is_terminal(m)


class _InFlight:
    """A tracked request: its filed, unconsumed messages; whether it was
    accepted; whether its terminal message has been filed."""
    __slots__ = ("queue", "accepted", "ended")

    def __init__(self) -> None:
        self.queue: Deque[Message] = collections.deque()
        self.accepted = False
        self.ended = False


class ClientProtocol:
    """The protocol state of one connection, free of I/O.

    Outgoing: :meth:`submit`, :meth:`cancel`, :meth:`ping`, :meth:`stats`,
    :meth:`health`, :meth:`models` and :meth:`encode` return the bytes to
    send. Incoming: :meth:`receive` decodes one multipart and files it.
    Reading: :meth:`next_event` (a request's next message, exactly one
    terminal), :meth:`next_unrouted`, :meth:`take_reply`, :meth:`result`.
    ``auth``: an API key sent as every submit's ``auth``.
    """

    def __init__(self, auth: Optional[str] = None, id_prefix: Optional[str] = None) -> None:
        self.auth = auth
        self._in_flight: Dict[str, _InFlight] = {}
        self._unrouted: Deque[Message] = collections.deque()
        self._ids = itertools.count(1)
        self._id_prefix = id_prefix if id_prefix is not None else "py%d-%x-" % (os.getpid(), id(self) & 0xFFFFFF)

    # -- outgoing ----------------------------------------------------------

    encode = staticmethod(encode)

    def submit(self, id: Optional[str] = None, **kw: Any) -> Tuple[str, bytes]:
        """``(id, data)``: the request's id (``id``, or a fresh one unique on
        this connection) and its ``submit`` message; the request is tracked
        from now on (:meth:`abandon` it if the send fails). ``kw``: the
        arguments of :func:`build_submit`. Raises ValueError when ``id`` is
        still tracked here (its terminal event not consumed yet)."""
        if id is None:
            id = self._id_prefix + str(next(self._ids))
        elif id in self._in_flight:
            raise ValueError("request id %r is still active on this client" % (id,))
        data = encode(build_submit(id, auth=self.auth, **kw))
        self._in_flight[id] = _InFlight()
        return id, data

    def abandon(self, id: str) -> None:
        """Stops tracking ``id`` (its submit could not be sent)."""
        self._in_flight.pop(id, None)

    @staticmethod
    def cancel(ids: Union[str, Iterable[str]]) -> bytes:
        """The ``cancel`` of one id (str) or several. Tracking is unchanged:
        the request ends when its ``finished`` (reason ``cancelled``) comes;
        an id nobody tracks is sent all the same (the server ignores it)."""
        if isinstance(ids, str):
            return encode({"v": PROTOCOL_VERSION, "t": "cancel", "id": ids})
        return encode({"v": PROTOCOL_VERSION, "t": "cancel", "ids": list(ids)})

    @staticmethod
    def ping(nonce: Any = None) -> Call:
        m: Message = {"v": PROTOCOL_VERSION, "t": "ping"}
        if nonce is not None:
            m["nonce"] = nonce
        return Call(encode(m), "pong")

    @staticmethod
    def stats() -> Call:
        return Call(encode({"v": PROTOCOL_VERSION, "t": "stats"}), "stats")

    @staticmethod
    def health() -> Call:
        return Call(encode({"v": PROTOCOL_VERSION, "t": "health"}), "health")

    @staticmethod
    def models() -> Call:
        return Call(encode({"v": PROTOCOL_VERSION, "t": "models"}), "models", "models")

    # -- incoming ----------------------------------------------------------

    def receive(self, frames: Sequence[bytes]) -> Event:
        """Decodes one received multipart and files its message. Raises
        :class:`ProtocolViolation` (nothing is filed then)."""
        return self._file(decode_frames(frames))

    def _file(self, m: Message) -> Event:
        """Files m under its tracked request, or keeps it as unrouted.

        An error with ``terminal: false`` (protocol.md) rejects another
        message naming the id (a duplicate submit, a malformed cancel), not
        that request's end: unrouted. So is a 409 for an id whose request
        was accepted (servers before the ``terminal`` flag), and anything
        for a request whose terminal message was filed already.
        """
        id = m.get("id")
        req = self._in_flight.get(id) if isinstance(id, str) else None
        t = m.get("t")
        if req is None or req.ended or (
                t == "error" and (m.get("terminal") is False or (m.get("code") == 409 and req.accepted))):
            self._unrouted.append(m)
            return Unrouted(m)
        if t == "accepted":
            req.accepted = True
        req.ended = is_terminal(m)
        req.queue.append(m)
        return RequestEvent(id, m, req.ended)

    # -- reading -------------------------------------------------------------

    def track(self, id: str) -> None:
        """Starts tracking ``id`` (a request sent raw with :meth:`encode`);
        its messages already kept as unrouted are filed under it."""
        self._in_flight.setdefault(id, _InFlight())
        pending, self._unrouted = self._unrouted, collections.deque()
        for m in pending:
            self._file(m)

    def next_event(self, state: RequestState) -> Optional[Message]:
        """The next filed message of request ``state.id``, recorded in
        ``state``, or None until one arrives. After the terminal one the id
        is no longer tracked and None is all that comes."""
        if state.done:
            return None
        req = self._in_flight.get(state.id)
        if req is None or not req.queue:
            return None
        m = req.queue.popleft()
        state._record(m)
        if state.done:
            del self._in_flight[state.id]
        return m

    def next_unrouted(self) -> Optional[Message]:
        """The oldest unrouted message, or None."""
        return self._unrouted.popleft() if self._unrouted else None

    def take_reply(self, call: Call) -> Optional[Message]:
        """The first unrouted message of ``call.reply_type`` (removed), or
        None. An unrouted error without id comes first if it is older: it is
        removed and raised as :class:`CortexError`."""
        for i, m in enumerate(self._unrouted):
            t = m.get("t")
            if t == call.reply_type or (t == "error" and m.get("id") is None):
                del self._unrouted[i]
                if t == "error":
                    raise CortexError.from_reply(m)
                return m
        return None

    @staticmethod
    def result(state: RequestState) -> Tuple[str, Message]:
        """``(text, finished)`` of an ended request: every chunk's text and
        the finished message's remaining text. Raises :class:`CortexError`
        if it ended with an ``error``, RuntimeError if it has not ended."""
        if state.error is not None:
            raise CortexError.from_reply(state.error)
        if state.finished is None:
            raise RuntimeError("request %r has not ended" % (state.id,))
        parts = [m.get("text", "") or "" for m in state.events if m.get("t") == "chunk"]
        parts.append(state.finished.get("text", "") or "")
        return "".join(parts), state.finished

    def pending(self, clear: bool = False) -> List[Message]:
        """The unrouted messages in arrival order; ``clear`` drops them."""
        taken = list(self._unrouted)
        if clear:
            self._unrouted.clear()
        return taken

    def in_flight(self) -> List[str]:
        """The tracked ids, oldest first (those whose terminal event is not
        consumed yet)."""
        return list(self._in_flight)
