"""Python client for cortexd, the CortexStream inference server.

Speaks wire protocol version 1 (``protocol.md`` in the shared docs): one
ZeroMQ DEALER connection per client, one msgpack map per message. Needs
``pyzmq`` and ``msgpack`` (Debian: ``python3-zmq``, ``python3-msgpack``).

Example::

    from cortexstream import Client

    with Client("tcp://127.0.0.1:5555", timeout_s=30) as c:
        for ev in c.submit(prompt="Once upon a time", max_tokens=64, temperature=0):
            if ev["t"] == "chunk":
                print(ev["text"], end="", flush=True)
        text, finished = c.complete(messages=[{"role": "user", "content": "Hi!"}], max_tokens=64)

:class:`AsyncClient` offers the same calls as coroutines (asyncio,
``zmq.asyncio``). Several requests may be in flight on one client: messages
are routed by request id and buffered until the caller reads them, so their
streams may be consumed in any order.

With access control on (cortexd ``--auth``): ``Client(endpoint,
server_key=read_curve_key("server.pub"), secret_key=read_curve_key("me.key"))``
for CURVE, or ``Client(endpoint, auth="cs-...")`` for the submit's ``auth``.

Command line: ``python3 -m cortexstream --endpoint tcp://127.0.0.1:5555 "Once upon a time"``
(``python3 -m cortexstream --help``).
"""

from ._transport import read_curve_key
from .protocol import PROTOCOL_VERSION, TERMINAL_TYPES, Message
from .async_client import AsyncClient, AsyncStream
from .client import Client, Stream
from .errors import CortexError, CortexTimeout, ProtocolViolation

__version__ = "1.0.0"

__all__ = [
    "AsyncClient", "AsyncStream", "Client", "CortexError", "CortexTimeout", "Message", "PROTOCOL_VERSION",
    "ProtocolViolation", "Stream", "TERMINAL_TYPES", "main", "read_curve_key",
]


def main(argv=None):  # type: ignore[no-untyped-def]
    """The command line (``python3 -m cortexstream``); returns the exit code."""
    from .cli import main as cli_main
    return cli_main(argv)
