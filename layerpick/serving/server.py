"""`layerpick serve`'s server: an OpenAI-compatible HTTP embeddings server around a sentence-transformers directory.

Owns: composing the pieces (the model from `layerpick.exporting.load`, the batching worker from
`layerpick.serving.batcher`, the HTTP layer from `layerpick.serving.http_layer`, the protocol from
`layerpick.serving.protocol`)
into one `EmbeddingServer`, answering its two endpoints, and the server's lifecycle: torch threads, bind,
serve, drain on SIGTERM/SIGINT/SIGHUP, close.

Endpoints: `POST /v1/embeddings` (OpenAI's request and response shapes) and `GET /health`.
Measured on the 2-core development machine (shared with other jobs): with a model that answers instantly,
the server costs 1-2 ms per request and answers ~285 requests/s from 8 client threads; with
all-MiniLM-L6-v2, 64 concurrent one-text requests took 1.1 s, no longer than encoding the same 64 texts
directly in one call (1.2 s), because the worker merged them into batches.

- Request threads validate, enqueue their texts and wait on a future; the worker thread drains the queue
  into batches of whole requests and runs one `SentenceTransformer.encode` per batch.
- One client's input never fails another's request: text the tokenizer cannot take is refused (400) when the
  request is parsed, and a batch that fails anyway is run again request by request, so only a request that
  fails alone gets its 500 (one line; the details go to the log).
- The response's `model` is the served model's name; with `strict_model`, a request naming another is a 404.
- Shutdown (SIGTERM, SIGINT, SIGHUP) drains: `/health` answers 503 from the first moment so a load balancer stops
  sending; the requests in flight and the connections already waiting in the listen backlog are all
  answered (up to `drain_timeout_s`); near the deadline what is still queued, and what arrives after, is answered
  503 with Retry-After (the batch running then finishes), so no response is cut off when the process exits; then
  the worker stops and the socket is closed.
- `threads` sets torch's intra-op thread count for the whole process before the model is loaded (a server
  owns its process); the worker thread uses that count.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from layerpick._util.torch_threads import current_threads, set_threads
from layerpick.exporting.load import (
    embedding_dimension,
    is_normalized,
    load_encoder,
)
from layerpick.exporting.metadata import ExportMetadata, read_metadata
from layerpick.serving.batcher import Batcher, BatcherClosed, make_batch_fn
from layerpick.serving.config import ServeConfig, ServeError
from layerpick.serving.http_layer import EmbeddingHTTPServer
from layerpick.serving.protocol import ApiError, check_model, embeddings_payload, parse_request

__all__ = ["EmbeddingServer", "ServeConfig", "ServeError", "serve"]

logger = logging.getLogger(__name__)

DRAIN_POLL_S = 0.05
RETRY_AFTER_S = 1  # what a request refused while draining is told to wait before sending again
# The part of the drain kept, at its end, for refusing what is still queued and answering: at least this, or twice
# the longest batch seen (the batch running at the refusal finishes), at most half the drain.
REFUSAL_MARGIN_S = 1.0


def default_model_name(directory: Path, metadata: ExportMetadata | None) -> str:
    """A layerpick export is named after its source and layer ('smollm2-135m-layer28'), else the folder."""
    if metadata is not None:
        return f"{Path(metadata.model.rstrip('/')).name}-layer{metadata.layer}"
    return directory.resolve().name


class EmbeddingServer:
    """The model, its batching worker and a bound HTTP server; `start()` or `serve_forever()` to serve.

    The model is loaded (or taken from `model`) once; the socket is bound on construction, so `url` is
    known before serving (port 0 picks a free port).
    """

    def __init__(self, directory: str | Path, config: ServeConfig = ServeConfig(), *, model=None):
        self.config = config.validate()
        self._check_address()
        set_threads(config.threads)
        self.threads = current_threads()
        self.directory = Path(directory).expanduser()
        self.model = model if model is not None else load_encoder(self.directory, config.device, config.backend)
        self.metadata = read_metadata(self.directory)
        self.model_name = config.model_name or default_model_name(self.directory, self.metadata)
        self.dimension = embedding_dimension(self.model)
        self.normalized = is_normalized(self.model)
        run_batch = make_batch_fn(self.model, config.batch_size)
        run_batch(["warm-up"])  # the first forward pass is slow; pay for it before serving
        self._init_lifecycle()
        self._httpd = self._bind()
        self._batcher = Batcher(run_batch, config.batch_size, config.max_wait_ms / 1000.0)

    def _init_lifecycle(self) -> None:
        self._lock = threading.Lock()
        self._shutdown_requested = False
        self._serving = False
        self._closing = False
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def _check_address(self) -> None:
        """Fail on a busy or unusable address before the model loads (the real bind comes after loading)."""
        if self.config.port == 0:
            return
        probe = socket.socket(EmbeddingHTTPServer.address_family, socket.SOCK_STREAM)
        try:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
            probe.bind((self.config.host, self.config.port))
        except OSError as error:
            address = f"{self.config.host}:{self.config.port}"
            raise ServeError(f"cannot listen on {address}: {error.strerror or error}") from None
        finally:
            probe.close()

    def _bind(self) -> EmbeddingHTTPServer:
        try:
            return EmbeddingHTTPServer(
                (self.config.host, self.config.port),
                {
                    ("GET", "/health"): lambda _: self.health_response(),
                    ("POST", "/v1/embeddings"): self.embeddings_response,
                },
                idle_timeout_s=self.config.idle_timeout_s,
                max_body_bytes=self.config.max_body_bytes,
            )
        except OSError as error:
            address = f"{self.config.host}:{self.config.port}"
            raise ServeError(f"cannot listen on {address}: {error.strerror or error}") from None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._httpd.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{f'[{host}]' if ':' in host else host}:{port}"

    def stats(self) -> dict:
        """Batching counters: batches run, requests and texts embedded, batches that merged requests."""
        return self._batcher.stats()

    # ---- responses (called from request threads)

    def health_response(self) -> tuple[int, dict]:
        status = "draining" if self._shutdown_requested else "ok"
        return (503 if self._shutdown_requested else 200), {
            "status": status,
            "model": self.model_name,
            "directory": str(self.directory),
            "dimensions": self.dimension,
            "normalized": self.normalized,
            "max_seq_length": self.model.max_seq_length,
            "device": str(self.model.device),
            "backend": self.config.backend,
            "threads": self.threads,
            "limits": {"max_inputs": self.config.max_inputs, "max_chars": self.config.max_chars},
            "strict_model": self.config.strict_model,
            "batching": {"batch_size": self.config.batch_size, "max_wait_ms": self.config.max_wait_ms, **self.stats()},
            "layerpick": self.metadata.to_json() if self.metadata else None,
        }

    def embeddings_response(self, body: bytes) -> tuple[int, dict]:
        request = parse_request(body, self.config, self.dimension)
        if self.config.strict_model:
            check_model(request.model, self.model_name)
        try:
            vectors, tokens = self._batcher.submit(request.texts).result()
        except BatcherClosed:
            raise ApiError(
                503,
                "the server is shutting down; send the request again (to another instance)",
                "server_error",
                code="shutting_down",
                retry_after_s=RETRY_AFTER_S,
            ) from None
        except Exception:  # noqa: BLE001 - the worker's failure (logged there), reported to this client alone
            raise ApiError(
                500,
                "embedding this request failed; the server's log has the details",
                "server_error",
                code="embedding_failed",
            ) from None
        return 200, embeddings_payload(request, vectors, tokens, self.model_name, self.normalized)

    # ---- lifecycle

    def serve_forever(self) -> None:
        """Serve in this thread until `request_shutdown()`; returns once in-flight requests are done."""
        with self._lock:
            if self._shutdown_requested:
                return
            self._serving = True
        try:
            self._httpd.serve_forever(poll_interval=0.2)
        finally:
            self._drain_and_close()

    def start(self) -> "EmbeddingServer":
        """Serve in a background thread; returns at once."""
        self._thread = threading.Thread(target=self.serve_forever, name="layerpick-http", daemon=True)
        self._thread.start()
        return self

    def request_shutdown(self) -> None:
        """Stop accepting connections and drain, without blocking (safe in a signal handler)."""
        with self._lock:
            if self._shutdown_requested:
                return
            self._shutdown_requested = True
            serving = self._serving
        logger.info("shutting down: no new connections; finishing requests in flight")
        target = self._httpd.shutdown if serving else self._drain_and_close
        threading.Thread(target=target, name="layerpick-shutdown", daemon=True).start()

    def shutdown(self, timeout: float | None = None) -> bool:
        """Stop and wait until in-flight requests are answered and the socket is closed."""
        self.request_shutdown()
        return self._stopped.wait(timeout)

    def _drain_and_close(self) -> None:
        with self._lock:
            self._shutdown_requested = True
            if self._stopped.is_set() or self._closing:
                return
            self._closing = True
        self._drain()
        self._batcher.close()
        self._httpd.server_close()
        self._stopped.set()
        logger.info("server stopped")

    def _drain(self) -> None:
        """Answer the requests in flight and every connection still waiting in the backlog, until none is left
        (or `drain_timeout_s` passes); connections that arrive meanwhile are answered too (/health: 503)."""
        timeout = self.config.drain_timeout_s
        deadline = time.monotonic() + timeout
        refused = False
        while True:
            accepted = self._httpd.accept_pending()
            idle = self._httpd.wait_idle(min(DRAIN_POLL_S, max(deadline - time.monotonic(), 0.0)))
            if idle and accepted == 0 and self._httpd.accept_pending() == 0:
                return
            margin = min(max(REFUSAL_MARGIN_S, 2 * self._batcher.longest_batch_s), timeout / 2)
            if not refused and time.monotonic() >= deadline - margin:
                refused = True  # what cannot finish in time is answered 503 + Retry-After, not cut off at exit
                logger.warning("drain deadline near: refusing the %d requests still waiting", self._httpd.in_flight)
                self._batcher.refuse_queued()
            if time.monotonic() >= deadline + margin:
                logger.warning("gave up waiting for %d requests after %.0f s", self._httpd.in_flight, timeout)
                return

    def __enter__(self) -> "EmbeddingServer":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


@contextmanager
def _shutdown_on_signals(callback: Callable[[], None]) -> Iterator[None]:
    """Route SIGTERM, SIGINT and SIGHUP (the terminal closing) to `callback` while serving (main thread only),
    then restore them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = [signal.SIGTERM, signal.SIGINT] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])  # POSIX only
    previous = {sig: signal.signal(sig, lambda _sig, _frame: callback()) for sig in stops}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(
    directory: str | Path,
    config: ServeConfig = ServeConfig(),
    on_ready: Callable[[EmbeddingServer], None] | None = None,
) -> None:
    """Load the model, bind, call `on_ready(server)`, and serve until SIGTERM/SIGINT; then drain and return."""
    server = EmbeddingServer(directory, config)
    logger.info("serving %s at %s", server.model_name, server.url)
    if on_ready is not None:
        on_ready(server)
    with _shutdown_on_signals(server.request_shutdown):
        server.serve_forever()
