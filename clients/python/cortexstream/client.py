"""The blocking client: one ZeroMQ DEALER connection per :class:`Client`."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import zmq

from . import _core
from ._core import Message
from .errors import CortexTimeout


class Stream(_core.StreamState):
    """The events of one request, in order: ``accepted``, ``chunk``\\*, then
    exactly one terminal ``finished`` or ``error`` (a rejected submit yields
    only the ``error``).

    Iterating yields each event as the decoded dict (``ev["t"]`` is its type)
    and stops after the terminal one. Error events are yielded, not raised; use
    :meth:`result` or :meth:`Client.complete` to get a :class:`CortexError`.
    After the stream ends, ``accepted``, ``finished`` and ``error`` hold those
    messages (or None) and ``events`` holds every event seen.
    """

    def __init__(self, client: "Client", id: str) -> None:
        super().__init__(id)
        self.client = client

    def __iter__(self) -> Iterator[Message]:
        return self

    def __next__(self) -> Message:
        if self.done:
            raise StopIteration
        m = self.client._next_for(self.id)
        if self._record(m):
            self.client._router.untrack(self.id)
        return m

    def cancel(self) -> None:
        """Asks the server to cancel this request; its stream then ends with
        ``finished`` reason ``cancelled`` (unless it had already ended)."""
        self.client.cancel(self.id)

    def result(self) -> Tuple[str, Message]:
        """Reads the stream to its end and returns ``(text, finished)``: all
        chunk texts plus the finished message's remaining text. Raises
        :class:`CortexError` if the request ended with an ``error``."""
        for _ in self:
            pass
        text = self._final_text(self._chunk_texts())
        assert self.finished is not None
        return text, self.finished


class Client:
    """One DEALER connection to cortexd.

    ``endpoint``: a ZeroMQ endpoint such as ``tcp://127.0.0.1:5555`` or
    ``ipc:///tmp/cortex.sock``. ``timeout_s``: the longest any call waits for
    one expected message before raising :class:`CortexTimeout`. The socket
    connects lazily (ZeroMQ reconnects by itself); close it with
    :meth:`close` or a ``with`` block. Not thread-safe (neither is a ZeroMQ
    socket): use one Client per thread.

    Credentials (auth.md in the shared docs): against ``cortexd
    --curve-secret-key``, ``server_key`` (the server's public key) and
    ``secret_key`` (this client's, whose public half is listed in cortexd's
    keys file; ``public_key`` may be given too and must match) make the
    connection a CURVE client: encrypted, and refused by the server unless
    the key is listed (then no reply ever arrives: :class:`CortexTimeout`).
    Keys are Z85 str or bytes (``read_curve_key("NAME.key")`` reads a file
    of ``cortex keys curve``). ``auth`` is an API key secret, sent as
    ``auth`` on every submit (cortexd ``--auth`` without CURVE).
    """

    def __init__(self, endpoint: str = "tcp://127.0.0.1:5555", timeout_s: float = 30.0,
                 context: Optional[zmq.Context] = None, server_key: Optional[_core.Key] = None,
                 public_key: Optional[_core.Key] = None, secret_key: Optional[_core.Key] = None,
                 auth: Optional[str] = None) -> None:
        curve = _core.curve_options(server_key, public_key, secret_key)
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.auth = auth
        self._ctx = context or zmq.Context.instance()
        self._sock: Optional[zmq.Socket] = _core.open_dealer(self._ctx, endpoint, curve, timeout_s)
        self._router = _core.Router()

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Closes the connection at once; the server cancels this client's
        requests when it notices the peer is gone."""
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- raw access --------------------------------------------------------

    def send(self, msg: Union[Mapping[str, Any], bytes, bytearray]) -> None:
        """Sends one message as is: a dict is packed with msgpack, ``bytes``
        go out unchanged (for tests that send malformed input). Adds nothing,
        not even ``v``."""
        try:
            self._socket().send(_core.encode(msg))
        except zmq.Again:
            raise _core.send_timeout(self.endpoint, self.timeout_s) from None

    def recv(self, timeout_s: Optional[float] = None) -> Message:
        """Returns the next message that belongs to no tracked request (a
        reply, an error, or traffic of a request sent with :meth:`send`), in
        arrival order. Raises :class:`CortexTimeout`."""
        return self._wait(self._router.pop_other, timeout_s)

    def track(self, id: str) -> Stream:
        """Returns a :class:`Stream` for a request submitted with
        :meth:`send`; messages for ``id`` already buffered are moved into it."""
        self._router.track(id)
        return Stream(self, id)

    def pending(self, clear: bool = False) -> List[Message]:
        """Buffered messages that belong to no tracked request (for tests);
        ``clear`` drops them from the buffer."""
        return self._router.take_other() if clear else list(self._router.other)

    # -- requests ----------------------------------------------------------

    def submit(self, prompt: Optional[str] = None, tokens: Optional[Iterable[int]] = None,
               messages: Optional[Sequence[Mapping[str, Any]]] = None,
               chat_template_kwargs: Optional[Mapping[str, Any]] = None,
               add_generation_prompt: Optional[bool] = None, id: Optional[str] = None, stream: bool = True,
               priority: int = 0, deadline_ms: Optional[int] = None, want_token_ids: bool = False,
               logprobs: int = 0, tags: Optional[Mapping[str, str]] = None, add_bos: Optional[bool] = None,
               extra: Optional[Mapping[str, Any]] = None, **params: Any) -> Stream:
        """Submits one request and returns its :class:`Stream` at once.

        Give exactly one of ``prompt`` (str), ``tokens`` (list of ids) or
        ``messages`` (chat turns ``{"role": "system"|"user"|"assistant"|"tool",
        "content": str or [{"type": "text", "text": str}], ...}`` rendered by
        the server with the model's chat template; with them,
        ``chat_template_kwargs`` (extra template variables, e.g.
        ``{"enable_thinking": False}``) and ``add_generation_prompt``).
        ``id`` defaults to a fresh id unique on this client; an id whose
        stream has not ended raises ValueError (use :meth:`send` to provoke
        the server's 409). ``stream=False`` asks for only ``accepted`` and a
        ``finished`` holding all the text. ``want_token_ids`` / ``logprobs``
        (0..20) add ``token_ids`` / ``logprobs`` to chunks. ``tags`` (str ->
        str) are echoed back. Keyword ``params`` are the sampling parameters
        of the protocol (``max_tokens``, ``temperature``, ``top_k``,
        ``top_p``, ``min_p``, ``seed``, ``stop``, ``stop_token_ids``,
        ``ignore_eos``, ``min_tokens``, ``logit_bias``, penalties...);
        float-typed ones are sent as floats, None ones are left out.
        ``extra`` adds top-level keys verbatim.
        """
        id = self._router.new_id(id)
        m = _core.build_submit(id, prompt=prompt, tokens=tokens, messages=messages,
                               chat_template_kwargs=chat_template_kwargs,
                               add_generation_prompt=add_generation_prompt, stream=stream, priority=priority,
                               deadline_ms=deadline_ms, want_token_ids=want_token_ids, logprobs=logprobs, tags=tags,
                               add_bos=add_bos, extra=extra, auth=self.auth, **params)
        self._router.open(id)
        try:
            self.send(m)
        except Exception:
            self._router.untrack(id)
            raise
        return Stream(self, id)

    def complete(self, prompt: Optional[str] = None, tokens: Optional[Iterable[int]] = None,
                 **kw: Any) -> Tuple[str, Message]:
        """Submits and waits: returns ``(text, finished)`` with all generated
        text. Raises :class:`CortexError` if the request is rejected or ends
        with an error. Takes the same arguments as :meth:`submit`."""
        return self.submit(prompt=prompt, tokens=tokens, **kw).result()

    def cancel(self, ids: Union[str, Iterable[str]]) -> None:
        """Cancels one id (str) or several (list). Unknown ids are ignored by
        the server; each cancelled request's stream ends with ``finished``
        reason ``cancelled``. Returns at once (no reply of its own)."""
        self.send(_core.cancel_message(ids))

    # -- connection-level calls --------------------------------------------

    def ping(self, nonce: Any = None) -> Message:
        """Round trip; returns the ``pong`` (``nonce`` echoed, ``server_time_ms``)."""
        return self._call(_core.ping_message(nonce), "pong")

    def stats(self) -> Message:
        """Returns the server's ``stats`` map (running, waiting, kv_blocks_used...)."""
        return self._call({"v": _core.PROTOCOL_VERSION, "t": "stats"}, "stats")

    def health(self) -> Message:
        """Returns the ``health`` reply: ``status`` is starting|ready|draining."""
        return self._call({"v": _core.PROTOCOL_VERSION, "t": "health"}, "health")

    def models(self) -> List[Message]:
        """Returns the list of loaded models (maps with name, arch, n_ctx, n_vocab...)."""
        return self._call({"v": _core.PROTOCOL_VERSION, "t": "models"}, "models").get("models")

    # -- internals -----------------------------------------------------------

    def _call(self, msg: Message, reply_type: str) -> Message:
        """Sends a connection-level message and returns the first buffered or
        arriving message of ``reply_type``; an id-less ``error`` is raised."""
        self.send(msg)
        return self._wait(lambda: self._router.pop_reply(reply_type))

    def _next_for(self, id: str) -> Message:
        return self._wait(lambda: self._router.pop_for(id))

    def _wait(self, pop: Callable[[], Optional[Message]], timeout_s: Optional[float] = None) -> Message:
        """The first non-None pop(), filing arriving messages until then.
        Raises :class:`CortexTimeout`."""
        wait_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + wait_s
        while True:
            m = pop()
            if m is not None:
                return m
            self._router.deliver(self._read(deadline, wait_s))

    def _socket(self) -> zmq.Socket:
        if self._sock is None:
            raise RuntimeError("client is closed")
        return self._sock

    def _read(self, deadline: float, wait_s: float) -> Message:
        sock = self._socket()
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sock.poll(max(1, int(left * 1000)), zmq.POLLIN):
                if time.monotonic() >= deadline:
                    raise CortexTimeout("no reply from %s within %.1f s" % (self.endpoint, wait_s))
                continue
            return _core.decode_frames(sock.recv_multipart())
