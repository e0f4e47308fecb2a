"""What the tests share: the server under test, the vectors file, loopback stand-ins."""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
import unittest
from pathlib import Path
from typing import Callable, List, Tuple

#: A running `snowmint serve --datacenter 1 --worker 7`, layout twitter.
SERVER = os.environ.get("SNOWMINT_URL")
VECTORS = Path(
    os.environ.get("SNOWMINT_VECTORS")
    or Path(__file__).resolve().parents[3] / "testdata" / "vectors.json"
)

needs_server = unittest.skipUnless(SERVER, "SNOWMINT_URL is not set")

#: The same kind of server over mutual TLS (`https://127.0.0.1:PORT`), the PEM file of the
#: CA that signs its certificate, and a client certificate and key it takes.
TLS_SERVER = os.environ.get("SNOWMINT_TLS_URL")
CA = os.environ.get("SNOWMINT_CA")
CLIENT_CERT = os.environ.get("SNOWMINT_CLIENT_CERT")
CLIENT_KEY = os.environ.get("SNOWMINT_CLIENT_KEY")

needs_tls_server = unittest.skipUnless(
    TLS_SERVER and CA and CLIENT_CERT and CLIENT_KEY,
    "SNOWMINT_TLS_URL, SNOWMINT_CA, SNOWMINT_CLIENT_CERT or SNOWMINT_CLIENT_KEY is not set",
)

#: (status, body, content type) for the n-th request (from 1) and its handler.
Answer = Callable[[int, http.server.BaseHTTPRequestHandler], Tuple[int, object, str]]


class Stub:
    """An HTTP server on loopback that answers with `answer(n, request)`, for what a healthy
    snowmint server never does."""

    def __init__(self, answer: Answer) -> None:
        self.requests: List[Tuple[str, dict]] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                stub.requests.append((self.path, dict(self.headers)))
                status, body, kind = answer(len(stub.requests), self)
                data = body if isinstance(body, str) else json.dumps(body)
                payload = data.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def __enter__(self) -> "Stub":
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


class Silent:
    """A loopback listener that accepts connections and never answers."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __enter__(self) -> "Silent":
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


def closed_port() -> int:
    """A loopback port that was free a moment ago, and that nothing listens on now."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]
