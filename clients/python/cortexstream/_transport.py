"""What the transports of Client and AsyncClient share: CURVE keys, the
DEALER socket and its setup, the timeout errors, and :class:`Connection`,
the base that holds one socket and one :class:`ClientProtocol`."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union

import zmq
from zmq.utils import z85

from .errors import CortexTimeout
from .protocol import ClientProtocol, Message

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
    zmq.Again, see :meth:`Connection._send_timeout`): with no connection to
    queue on, e.g. after the server refused a CURVE handshake, it would wait
    forever."""
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDTIMEO, max(1, int(timeout_s * 1000)))
    if curve is not None:
        sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = curve
    sock.connect(endpoint)
    return sock


class Connection:
    """One DEALER socket (plaintext or CURVE) and the protocol state of its
    connection; Client and AsyncClient add the sending and the waiting."""

    def __init__(self, ctx: zmq.Context, endpoint: str, timeout_s: float, server_key: Optional[Key],
                 public_key: Optional[Key], secret_key: Optional[Key], auth: Optional[str]) -> None:
        curve = curve_options(server_key, public_key, secret_key)
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self._ctx = ctx
        self._proto = ClientProtocol(auth=auth)
        self._sock: Optional[zmq.Socket] = open_dealer(ctx, endpoint, curve, timeout_s)

    @property
    def auth(self) -> Optional[str]:
        """The API key sent as every submit's ``auth`` (None: none)."""
        return self._proto.auth

    @auth.setter
    def auth(self, value: Optional[str]) -> None:
        self._proto.auth = value

    def close(self) -> None:
        """Closes the connection at once; the server cancels this client's
        requests when it notices the peer is gone."""
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None

    def pending(self, clear: bool = False) -> List[Message]:
        """Buffered messages that belong to no tracked request (for tests);
        ``clear`` drops them from the buffer."""
        return self._proto.pending(clear)

    def _socket(self) -> Any:
        if self._sock is None:
            raise RuntimeError("client is closed")
        return self._sock

    def _send_timeout(self) -> CortexTimeout:
        """The error for a send that found no connection within the timeout."""
        return CortexTimeout("cannot send to %s within %.1f s: no connection (is cortexd running there, and does "
                             "it accept this client's CURVE key?)" % (self.endpoint, self.timeout_s))

    def _recv_timeout(self, wait_s: float) -> CortexTimeout:
        """The error for a wait of ``wait_s`` that received nothing expected."""
        return CortexTimeout("no reply from %s within %.1f s" % (self.endpoint, wait_s))
