"""Ids from ``snowmint serve`` over HTTP, through a local buffer that a background thread
refills before it runs dry."""

from __future__ import annotations

import collections
import http.client
import json
import socket
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, List, Optional, Tuple

from .errors import ConfigError, ConnectionError, ServerError
from .version import __version__

#: The server's default largest count of /v1/ids (its --max-batch).
SERVER_MAX_BATCH = 100_000
#: How much of an error body that is no JSON a message quotes.
_QUOTE_CHARS = 200


class _Request:
    """One request in flight: only one at a time, so that ids come out in order."""

    __slots__ = ("done", "error", "reports")

    def __init__(self, reports: bool) -> None:
        self.done = False
        self.error: Optional[BaseException] = None
        # Whether a caller waiting for ids hears of its failure: true for a refill.
        self.reports = reports


class Client:
    """A client of one snowmint server; safe to share between threads.

    >>> client = Client("http://127.0.0.1:8080")  # doctest: +SKIP
    >>> client.next_id()                          # doctest: +SKIP
    2125143637301030912

    ``token`` is the bearer token of a server started with ``--auth-token``; ``timeout``
    the longest wait for one answer, in seconds; ``batch_size`` the ids per refill of the
    buffer (with 1, ids come one at a time from ``/v1/id``); ``refill_below`` how few ids
    left start a refill (default a quarter of the batch; 0 refills only an empty buffer);
    ``max_batch`` the server's ``--max-batch``, past which counts are fetched in parts;
    ``opener`` the ``urllib.request.OpenerDirector`` to use.

    For an ``https://`` server, ``ca_file`` is the PEM file of the CA that signs its
    certificate (the system's CAs without it); ``cert_file`` and ``key_file``, together, the
    client certificate and key for a server started with ``--tls-client-ca``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: Optional[str] = None,
        timeout: float = 5.0,
        batch_size: int = 100,
        refill_below: Optional[int] = None,
        max_batch: int = SERVER_MAX_BATCH,
        opener: Optional[urllib.request.OpenerDirector] = None,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"base url {base_url!r} must start with http:// or https://")
        # Paths resolve below the base, so a server behind a path prefix keeps it.
        self._base = base_url if base_url.endswith("/") else base_url + "/"
        self._headers = {
            "Accept": "application/json",
            "User-Agent": f"snowmint-python/{__version__}",
        }
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ConfigError(f"timeout {timeout!r} is out of range: expected seconds above 0")
        self.timeout = timeout
        self.max_batch = _whole(max_batch, "max batch", 1, None)
        self.batch_size = _whole(batch_size, "batch size", 1, max_batch, "the max batch")
        if refill_below is None:
            refill_below = batch_size // 4
        self.refill_below = _whole(refill_below, "refill threshold", 0, batch_size, "the batch size")
        context = _tls_context(ca_file, cert_file, key_file)
        if context is not None:
            if opener is not None:
                raise ConfigError("give ca_file, cert_file and key_file, or an opener, not both")
            opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
        self._opener = opener or urllib.request.build_opener()
        self._cond = threading.Condition()
        self._buffer: collections.deque[int] = collections.deque()
        self._request: Optional[_Request] = None

    @property
    def buffered(self) -> int:
        """How many ids the buffer holds now."""
        return len(self._buffer)

    def next_id(self) -> int:
        """One id, from the buffer; a refill starts in the background when it runs low."""
        with self._cond:
            while not self._buffer:
                request = self._request or self._start_refill()
                self._cond.wait_for(lambda: request.done)
                if not self._buffer and request.reports and request.error is not None:
                    raise request.error
            id = self._buffer.popleft()
            self._refill_if_low()
            return id

    def next_ids(self, count: int) -> List[int]:
        """``count`` ids in increasing order: the buffer's first, the rest straight from the
        server."""
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count must be an int, got {type(count).__name__}")
        if count < 1:
            raise ValueError(f"count {count} is out of range: expected 1 or more")
        with self._cond:
            # A refill in flight lands first, so that the ids come out in the order made.
            while self._request is not None:
                request = self._request
                self._cond.wait_for(lambda: request.done)
            ids = [self._buffer.popleft() for _ in range(min(count, len(self._buffer)))]
            if len(ids) == count:
                self._refill_if_low()
                return ids
            request = self._request = _Request(reports=False)
        try:
            rest = self._fetch_many(count - len(ids))
        except BaseException:
            with self._cond:
                self._buffer.extendleft(reversed(ids))
                self._finish(request)
            raise
        with self._cond:
            self._finish(request)
            self._refill_if_low()
        return ids + rest

    # The methods below run with self._cond held, but for the fetches themselves.

    def _refill_if_low(self) -> None:
        if len(self._buffer) < self.refill_below and self._request is None:
            self._start_refill()

    def _start_refill(self) -> _Request:
        request = self._request = _Request(reports=True)
        threading.Thread(
            target=self._refill, args=(request,), name="snowmint-refill", daemon=True
        ).start()
        return request

    def _refill(self, request: _Request) -> None:
        ids: List[int] = []
        try:
            ids = self._fetch_ids(self.batch_size)
        except BaseException as error:  # handed to the caller that waits for these ids
            request.error = error
        with self._cond:
            self._buffer.extend(ids)
            self._finish(request)

    def _finish(self, request: _Request) -> None:
        request.done = True
        if self._request is request:
            self._request = None
        self._cond.notify_all()

    def _fetch_many(self, count: int) -> List[int]:
        ids: List[int] = []
        while len(ids) < count:
            ids.extend(self._fetch_ids(min(count - len(ids), self.max_batch)))
        return ids

    def _fetch_ids(self, count: int) -> List[int]:
        if count == 1:
            url, body = self._get("v1/id")
            id = body.get("id") if isinstance(body, dict) else None
            if not _is_decimal(id):
                raise ServerError(f'server answered {url} without an "id" string', 200, "")
            return [int(id)]
        url, body = self._get(f"v1/ids?count={count}")
        ids = body.get("ids") if isinstance(body, dict) else None
        if not isinstance(ids, list) or len(ids) != count or not all(map(_is_decimal, ids)):
            raise ServerError(
                f'server answered {url} without an "ids" list of {count} decimal strings', 200, ""
            )
        return [int(id) for id in ids]

    def _get(self, path: str) -> Tuple[str, Any]:
        url = urllib.parse.urljoin(self._base, path)
        request = urllib.request.Request(url, headers=self._headers)
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                text = response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            raise _server_error(url, error) from error
        except urllib.error.URLError as error:
            if isinstance(error.reason, (socket.timeout, TimeoutError)):
                raise self._timed_out(url) from error
            if isinstance(error.reason, ssl.SSLCertVerificationError):
                raise _untrusted(url, error.reason) from error
            raise ConnectionError(f"cannot reach {url}: {_reason(error.reason)}") from error
        except (socket.timeout, TimeoutError) as error:
            raise self._timed_out(url) from error
        except ssl.SSLCertVerificationError as error:
            raise _untrusted(url, error) from error
        except (OSError, http.client.HTTPException) as error:
            raise ConnectionError(f"cannot reach {url}: {_reason(error)}") from error
        try:
            return url, json.loads(text)
        except ValueError:
            raise ServerError(
                f"server answered {url} with no JSON: {text[:_QUOTE_CHARS]}", 200, ""
            ) from None

    def _timed_out(self, url: str) -> ConnectionError:
        return ConnectionError(f"no answer from {url} within {self.timeout:g} s")


def _server_error(url: str, error: urllib.error.HTTPError) -> ServerError:
    try:
        text = error.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        text = ""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        detail = body["error"]
    else:
        detail = text.strip()[:_QUOTE_CHARS] or "(no body)"
    status = f"{error.code} {error.reason}".strip()
    return ServerError(f"server answered {status} to {url}: {detail}", error.code, detail)


def _tls_context(
    ca_file: Optional[str], cert_file: Optional[str], key_file: Optional[str]
) -> Optional[ssl.SSLContext]:
    """The TLS settings of an https:// server, or None when none is given."""
    if ca_file is None and cert_file is None and key_file is None:
        return None
    if (cert_file is None) != (key_file is None):
        raise ConfigError("cert_file and key_file go together: give both or neither")
    try:
        context = ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(f"ca_file {ca_file!r}: {_reason(error)}") from error
    if cert_file is not None:
        try:
            context.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as error:
            raise ConfigError(
                f"cert_file {cert_file!r} with key_file {key_file!r}: {_reason(error)}"
            ) from error
    return context


def _untrusted(url: str, error: ssl.SSLCertVerificationError) -> ConnectionError:
    reason = error.verify_message or _reason(error)
    return ConnectionError(f"cannot reach {url}: the server's certificate is not trusted: {reason}")


def _reason(reason: object) -> str:
    """An OS error as its text alone ("connection refused"), anything else as it prints."""
    strerror = getattr(reason, "strerror", None)
    return strerror.lower() if isinstance(strerror, str) else str(reason)


def _is_decimal(value: object) -> bool:
    return (
        isinstance(value, str)
        and 1 <= len(value) <= 20
        and value.isascii()
        and value.isdigit()
    )


def _whole(value: object, what: str, low: int, high: Optional[int], high_name: str = "") -> int:
    """A whole number within low..=high, or a ConfigError naming it and the range."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        if high is None:
            raise ConfigError(f"{what} {value!r} is out of range: expected {low} or more")
        limit = f"{high} ({high_name})" if high_name else f"{high}"
        raise ConfigError(f"{what} {value!r} is out of range {low}..={limit}")
    return value
