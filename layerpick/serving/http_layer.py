"""The HTTP layer of `layerpick serve`: routing, reading bodies, writing JSON, counting requests in flight.

Owns: the request handler (routes `GET /health` and `POST /v1/embeddings` to the app, answers 404/405/411/
413/408 and a logged 500 as JSON errors, never lets an exception kill a connection thread) and the
threading server that counts connections in flight so that shutdown can wait for them.
Standard library only (`http.server.ThreadingHTTPServer`), because the HTTP layer is not what limits it.

One request per connection (HTTP/1.0 semantics): every accepted connection is exactly one request in
flight, which makes draining on shutdown exact. The listen backlog is long (`request_queue_size`), so a burst
of connections waits its turn instead of being reset, and `accept_pending` lets a drain answer the
connections the kernel has already accepted on the server's behalf before the socket is closed.

The layer knows no app: whoever builds the server hands it its routes, each (method, path) -> a callback that
takes the request body (empty for GET) and returns (status, JSON payload), and its two limits (the idle timeout
and the largest body). `layerpick.serving.server.EmbeddingServer` hands it `/health` and `/v1/embeddings`.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import urlsplit

from layerpick._util.finite import strict_json_dumps
from layerpick._util.numerals import is_ascii_number
from layerpick.serving.protocol import ApiError

logger = logging.getLogger(__name__)

Answer = Callable[[bytes], "tuple[int, dict]"]  # the request body (b"" for GET) -> (status, JSON payload)


class EmbeddingHandler(BaseHTTPRequestHandler):
    server_version = "layerpick"
    protocol_version = "HTTP/1.0"

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout_s
        super().setup()

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        routes: dict[tuple[str, str], Answer] = self.server.routes
        path = urlsplit(self.path).path.rstrip("/") or "/"
        headers: dict[str, str] = {}
        try:
            answer = routes.get((method, path))
            if answer is None:
                raise route_error(method, path, {p for _, p in routes})
            status, payload = answer(self._read_body() if method == "POST" else b"")
        except ApiError as error:
            status, payload = error.status, error.payload()
            if error.retry_after_s is not None:
                headers["Retry-After"] = str(error.retry_after_s)
        except Exception:  # noqa: BLE001 - a bug must still get an answer, and a log line
            logger.exception("unexpected error answering %s %s", method, path)
            status, payload = 500, ApiError(500, "internal server error", "server_error").payload()
        self._send_json(status, payload, headers)

    def _read_body(self) -> bytes:
        limit = self.server.max_body_bytes
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raise ApiError(411, "send the body with a Content-Length header (chunked bodies are not supported)")
        length = self.headers.get("Content-Length")
        if length is None or not is_ascii_number(length.strip()):
            raise ApiError(411, "a Content-Length header is required")
        if int(length) > limit:
            raise ApiError(
                413, f"request body of {int(length)} bytes is over the limit of {limit} bytes", code="body_too_large"
            )
        try:
            return self.rfile.read(int(length))
        except TimeoutError:
            raise ApiError(408, "timed out reading the request body", code="timeout") from None

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        body = strict_json_dumps(payload, separators=(",", ":")).encode("utf-8")
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client went away (reset, broken pipe, timeout)
            logger.debug("client went away before the response was sent")

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - http.server's signature
        logger.debug("%s %s", self.address_string(), format % args)


def route_error(method: str, path: str, known_paths: set[str]) -> ApiError:
    """405 for a known path with the wrong method, 404 (naming the endpoints) for an unknown path."""
    if path in known_paths:
        return ApiError(405, f"{method} is not allowed on {path}", code="method_not_allowed")
    return ApiError(
        404, f"unknown path {path}: use POST /v1/embeddings or GET /health", "not_found_error", code="not_found"
    )


class EmbeddingHTTPServer(ThreadingHTTPServer):
    """Counts connections in flight (one request each), so shutdown can wait for them."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024  # the listen backlog (the kernel caps it at net.core.somaxconn); the default is 5

    def __init__(
        self,
        address: tuple[str, int],
        routes: dict[tuple[str, str], Answer],
        *,
        idle_timeout_s: float,
        max_body_bytes: int,
    ):
        self.routes, self.idle_timeout_s, self.max_body_bytes = routes, idle_timeout_s, max_body_bytes
        self.in_flight = 0
        self.idle = threading.Condition()
        super().__init__(address, EmbeddingHandler)

    def process_request(self, request, client_address) -> None:
        with self.idle:
            self.in_flight += 1
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.idle:
                self.in_flight -= 1
                self.idle.notify_all()

    def handle_error(self, request, client_address) -> None:
        logger.debug("connection from %s failed", client_address, exc_info=True)

    def wait_idle(self, timeout: float) -> bool:
        with self.idle:
            return self.idle.wait_for(lambda: self.in_flight == 0, timeout=timeout)

    def accept_pending(self) -> int:
        """Accept and start answering every connection waiting in the listen backlog; returns how many.
        For draining after `serve_forever` stopped: those clients were already connected."""
        accepted = 0
        self.socket.setblocking(False)
        try:
            while True:
                try:
                    request, address = self.socket.accept()
                except OSError:  # BlockingIOError: the backlog is empty
                    return accepted
                request.setblocking(True)
                if self.verify_request(request, address):
                    self.process_request(request, address)
                else:
                    self.shutdown_request(request)
                accepted += 1
        finally:
            self.socket.setblocking(True)
