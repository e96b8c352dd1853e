"""Exceptions of the cortexstream client."""

from __future__ import annotations

from typing import Any, Dict, Optional


class CortexError(Exception):
    """An ``error`` reply from the server.

    Attributes: ``code`` (HTTP-like uint, e.g. 400), ``name`` (e.g.
    ``invalid_param``), ``message`` (what to fix), ``retryable`` (bool),
    ``retry_after_ms`` (or None), ``id`` (request id, or None for
    connection-level errors) and ``reply`` (the whole decoded message).
    """

    def __init__(self, code: Optional[int], name: Optional[str], message: Optional[str], retryable: bool = False,
                 retry_after_ms: Optional[int] = None, id: Optional[str] = None,
                 reply: Optional[Dict[str, Any]] = None) -> None:
        super().__init__("%s %s: %s" % (code, name, message))
        self.code = code
        self.name = name
        self.message = message
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms
        self.id = id
        self.reply = reply

    @classmethod
    def from_reply(cls, m: Dict[str, Any]) -> "CortexError":
        """Builds the exception from a decoded ``error`` message."""
        return cls(m.get("code"), m.get("name"), m.get("message"), bool(m.get("retryable", False)),
                   m.get("retry_after_ms"), m.get("id"), m)


class CortexTimeout(TimeoutError):
    """No expected message arrived within the client's ``timeout_s``."""


class ProtocolViolation(Exception):
    """The server sent something protocol v1 does not allow (not a msgpack map)."""
