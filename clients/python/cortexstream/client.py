"""The blocking client: one ZeroMQ DEALER connection per :class:`Client`."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import zmq

from ._transport import Connection, Key
from .protocol import Call, Message, RequestState


class Stream(RequestState):
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
        return self.client._next_event(self)

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
        return self.client._proto.result(self)


class Client(Connection):
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
                 context: Optional[zmq.Context] = None, server_key: Optional[Key] = None,
                 public_key: Optional[Key] = None, secret_key: Optional[Key] = None,
                 auth: Optional[str] = None) -> None:
        super().__init__(context or zmq.Context.instance(), endpoint, timeout_s, server_key, public_key, secret_key,
                         auth)

    # -- lifecycle (close: see Connection) ---------------------------------

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- raw access --------------------------------------------------------

    def send(self, msg: Union[Mapping[str, Any], bytes, bytearray]) -> None:
        """Sends one message as is: a dict is packed with msgpack, ``bytes``
        go out unchanged (for tests that send malformed input). Adds nothing,
        not even ``v``."""
        self._send(self._proto.encode(msg))

    def recv(self, timeout_s: Optional[float] = None) -> Message:
        """Returns the next message that belongs to no tracked request (a
        reply, an error, or traffic of a request sent with :meth:`send`), in
        arrival order. Raises :class:`CortexTimeout`."""
        return self._wait(self._proto.next_unrouted, timeout_s)

    def track(self, id: str) -> Stream:
        """Returns a :class:`Stream` for a request submitted with
        :meth:`send`; messages for ``id`` already buffered are moved into it."""
        self._proto.track(id)
        return Stream(self, id)

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
        id, data = self._proto.submit(id, prompt=prompt, tokens=tokens, messages=messages,
                                      chat_template_kwargs=chat_template_kwargs,
                                      add_generation_prompt=add_generation_prompt, stream=stream, priority=priority,
                                      deadline_ms=deadline_ms, want_token_ids=want_token_ids, logprobs=logprobs,
                                      tags=tags, add_bos=add_bos, extra=extra, **params)
        try:
            self._send(data)
        except BaseException:
            self._proto.abandon(id)
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
        self._send(self._proto.cancel(ids))

    # -- connection-level calls --------------------------------------------

    def ping(self, nonce: Any = None) -> Message:
        """Round trip; returns the ``pong`` (``nonce`` echoed, ``server_time_ms``)."""
        return self._call(self._proto.ping(nonce))

    def stats(self) -> Message:
        """Returns the server's ``stats`` map (running, waiting, kv_blocks_used...)."""
        return self._call(self._proto.stats())

    def health(self) -> Message:
        """Returns the ``health`` reply: ``status`` is starting|ready|draining."""
        return self._call(self._proto.health())

    def models(self) -> List[Message]:
        """Returns the list of loaded models (maps with name, arch, n_ctx, n_vocab...)."""
        return self._call(self._proto.models())

    # -- internals: the transport -------------------------------------------

    def _send(self, data: bytes) -> None:
        try:
            self._socket().send(data)
        except zmq.Again:
            raise self._send_timeout() from None

    def _call(self, call: Call) -> Any:
        """Sends a connection-level request and returns the result of the
        first buffered or arriving reply; an id-less ``error`` is raised."""
        self._send(call.data)
        return call.result(self._wait(lambda: self._proto.take_reply(call)))

    def _next_event(self, stream: Stream) -> Message:
        return self._wait(lambda: self._proto.next_event(stream))

    def _wait(self, pop: Callable[[], Optional[Message]], timeout_s: Optional[float] = None) -> Message:
        """The first non-None pop(), reading the socket until then. Raises
        :class:`CortexTimeout`."""
        wait_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + wait_s
        while True:
            m = pop()
            if m is not None:
                return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._recv_timeout(wait_s)
            sock = self._socket()
            if sock.poll(max(1, int(left * 1000)), zmq.POLLIN):
                self._proto.receive(sock.recv_multipart())
