"""The asyncio client: :class:`AsyncClient` has the methods of
:class:`cortexstream.Client` as coroutines, on a ``zmq.asyncio`` socket.

Any number of tasks may use one AsyncClient at once (several streams read
concurrently, connection-level calls between them): one task at a time reads
the socket and files each message under its request; the others wait until
something arrives and look again.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Callable, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import zmq
import zmq.asyncio

from ._transport import Connection, Key
from .protocol import Call, Message, RequestState


class AsyncStream(RequestState):
    """The events of one request (see :class:`cortexstream.Stream`), read
    with ``async for``; :meth:`cancel` and :meth:`result` are coroutines."""

    def __init__(self, client: "AsyncClient", id: str) -> None:
        super().__init__(id)
        self.client = client

    def __aiter__(self) -> AsyncIterator[Message]:
        return self

    async def __anext__(self) -> Message:
        if self.done:
            raise StopAsyncIteration
        return await self.client._next_event(self)

    async def cancel(self) -> None:
        """Asks the server to cancel this request; its stream then ends with
        ``finished`` reason ``cancelled`` (unless it had already ended)."""
        await self.client.cancel(self.id)

    async def result(self) -> Tuple[str, Message]:
        """Reads the stream to its end and returns ``(text, finished)``.
        Raises :class:`CortexError` if the request ended with an ``error``."""
        async for _ in self:
            pass
        return self.client._proto.result(self)


class AsyncClient(Connection):
    """One DEALER connection to cortexd for asyncio programs::

        async with AsyncClient("tcp://127.0.0.1:5555") as c:
            s = await c.submit(messages=[{"role": "user", "content": "Hi"}], max_tokens=64)
            async for ev in s:
                ...

    Arguments as for :class:`cortexstream.Client`; ``context`` is a
    ``zmq.asyncio.Context`` (default: the shared instance). Every wait is
    bounded by ``timeout_s`` (:class:`CortexTimeout`).
    """

    def __init__(self, endpoint: str = "tcp://127.0.0.1:5555", timeout_s: float = 30.0,
                 context: Optional[zmq.asyncio.Context] = None, server_key: Optional[Key] = None,
                 public_key: Optional[Key] = None, secret_key: Optional[Key] = None,
                 auth: Optional[str] = None) -> None:
        super().__init__(context or zmq.asyncio.Context.instance(), endpoint, timeout_s, server_key, public_key,
                         secret_key, auth)
        self._reading = False                          # a task is reading the socket
        self._arrived: Optional[asyncio.Event] = None  # set when the reader files a message or stops

    # -- lifecycle (close: see Connection) ---------------------------------

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    # -- raw access --------------------------------------------------------

    async def send(self, msg: Union[Mapping[str, Any], bytes, bytearray]) -> None:
        """Sends one message as is (see :meth:`Client.send`)."""
        await self._send(self._proto.encode(msg))

    async def recv(self, timeout_s: Optional[float] = None) -> Message:
        """The next message that belongs to no tracked request (see
        :meth:`Client.recv`)."""
        return await self._wait(self._proto.next_unrouted, timeout_s)

    def track(self, id: str) -> AsyncStream:
        """An :class:`AsyncStream` for a request submitted with :meth:`send`."""
        self._proto.track(id)
        return AsyncStream(self, id)

    # -- requests ----------------------------------------------------------

    async def submit(self, prompt: Optional[str] = None, tokens: Optional[Iterable[int]] = None,
                     messages: Optional[Sequence[Mapping[str, Any]]] = None,
                     chat_template_kwargs: Optional[Mapping[str, Any]] = None,
                     add_generation_prompt: Optional[bool] = None, id: Optional[str] = None, stream: bool = True,
                     priority: int = 0, deadline_ms: Optional[int] = None, want_token_ids: bool = False,
                     logprobs: int = 0, tags: Optional[Mapping[str, str]] = None, add_bos: Optional[bool] = None,
                     extra: Optional[Mapping[str, Any]] = None, **params: Any) -> AsyncStream:
        """Sends a ``submit`` and returns its :class:`AsyncStream`; the
        arguments are those of :meth:`Client.submit`."""
        id, data = self._proto.submit(id, prompt=prompt, tokens=tokens, messages=messages,
                                      chat_template_kwargs=chat_template_kwargs,
                                      add_generation_prompt=add_generation_prompt, stream=stream, priority=priority,
                                      deadline_ms=deadline_ms, want_token_ids=want_token_ids, logprobs=logprobs,
                                      tags=tags, add_bos=add_bos, extra=extra, **params)
        try:
            await self._send(data)
        except BaseException:
            self._proto.abandon(id)
            raise
        return AsyncStream(self, id)

    async def complete(self, prompt: Optional[str] = None, tokens: Optional[Iterable[int]] = None,
                       **kw: Any) -> Tuple[str, Message]:
        """Submits and waits: ``(text, finished)`` (see :meth:`Client.complete`)."""
        return await (await self.submit(prompt=prompt, tokens=tokens, **kw)).result()

    async def cancel(self, ids: Union[str, Iterable[str]]) -> None:
        """Cancels one id or several (see :meth:`Client.cancel`)."""
        await self._send(self._proto.cancel(ids))

    # -- connection-level calls --------------------------------------------

    async def ping(self, nonce: Any = None) -> Message:
        return await self._call(self._proto.ping(nonce))

    async def stats(self) -> Message:
        return await self._call(self._proto.stats())

    async def health(self) -> Message:
        return await self._call(self._proto.health())

    async def models(self) -> List[Message]:
        return await self._call(self._proto.models())

    # -- internals -----------------------------------------------------------

    async def _send(self, data: bytes) -> None:
        try:
            await self._socket().send(data)
        except zmq.Again:
            raise self._send_timeout() from None

    async def _call(self, call: Call) -> Any:
        await self._send(call.data)
        return call.result(await self._wait(lambda: self._proto.take_reply(call), None))

    async def _next_event(self, stream: AsyncStream) -> Message:
        return await self._wait(lambda: self._proto.next_event(stream), None)

    async def _wait(self, pop: Callable[[], Optional[Message]], timeout_s: Optional[float]) -> Message:
        """The first non-None pop(), reading the socket (or waiting for the
        task that reads it) until then. Raises :class:`CortexTimeout`."""
        loop = asyncio.get_running_loop()
        wait_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = loop.time() + wait_s
        while True:
            m = pop()
            if m is not None:
                return m
            left = deadline - loop.time()
            if left <= 0:
                raise self._recv_timeout(wait_s)
            if self._reading:
                arrived = self._arrival_event()
                try:
                    await asyncio.wait_for(arrived.wait(), left)
                except asyncio.TimeoutError:
                    pass  # the loop raises CortexTimeout
                continue
            self._reading = True
            try:
                if await self._socket().poll(max(1, int(left * 1000)), zmq.POLLIN):
                    self._proto.receive(await self._socket().recv_multipart())
            finally:
                self._reading = False
                self._arrival_event().set()  # wake the waiters: news, or the reader's seat is free
                self._arrived = None

    def _arrival_event(self) -> asyncio.Event:
        if self._arrived is None:  # made lazily: an Event belongs to the running loop
            self._arrived = asyncio.Event()
        return self._arrived
