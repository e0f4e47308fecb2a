"""The errors this package raises: one class per layer, each message naming the value at
fault and the limit it broke."""

from __future__ import annotations

import builtins


class SnowmintError(Exception):
    """Every error this package raises."""


class LayoutError(SnowmintError, ValueError):
    """A layout that is no preset and no valid ``custom:T/D/W/S``, or a bad tick or epoch."""


class DecodeError(SnowmintError, ValueError):
    """Text that is no 64-bit decimal id, or an id past what its layout holds."""


#: Deprecated: the old name of :class:`DecodeError`, kept so that existing code runs.
IdError = DecodeError


class ConfigError(SnowmintError, ValueError):
    """Settings a client cannot work with: a batch size past the limit, a bad base URL."""


class ConnectionError(SnowmintError, builtins.ConnectionError):
    """The request got no answer: the server is unreachable or timed out.

    Also the built-in ``ConnectionError`` (an ``OSError``), so that code catching network
    failures in general catches this one too.
    """


#: Deprecated: the old name of :class:`ConnectionError`, kept so that existing code runs.
RequestError = ConnectionError


class ServerError(SnowmintError):
    """The server answered with an error status, or with a body that holds no ids.

    ``status`` is the HTTP status and ``detail`` the server's own error text.
    """

    def __init__(self, message: str, status: int, detail: str) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail
