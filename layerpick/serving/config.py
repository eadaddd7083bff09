"""Settings of `layerpick serve`: `ServeConfig`, its checks, and `ServeError` for a server that cannot start.

Owns: the defaults (bound to loopback only, request limits, batching), the one-line messages for bad
settings, and the body-size limit derived from the request limits.
"""

from __future__ import annotations

from dataclasses import dataclass

from layerpick.errors import LayerpickError
from layerpick.exporting.load import runtime_problem


class ServeError(LayerpickError):
    """A server that cannot start: bad settings, an address in use."""


@dataclass(frozen=True)
class ServeConfig:
    """How to serve; the defaults bind to loopback only. `threads=None` keeps torch's default.
    `strict_model` refuses (404) a request whose `model` is not the served name; otherwise any is answered."""

    host: str = "127.0.0.1"
    port: int = 8080
    max_inputs: int = 256
    max_chars: int = 8192
    batch_size: int = 32
    max_wait_ms: float = 5.0
    device: str = "auto"
    model_name: str | None = None
    drain_timeout_s: float = 30.0
    idle_timeout_s: float = 10.0
    threads: int | None = None
    backend: str = "torch"  # torch, onnx or onnx-int8 (the export's ONNX graphs, through onnxruntime)
    strict_model: bool = False

    def validate(self) -> "ServeConfig":
        if not self.drain_timeout_s > 0:
            raise ServeError(f"--drain-timeout must be above 0 seconds (got {self.drain_timeout_s})")
        if not 0 <= self.port <= 65535:
            raise ServeError(f"--port must be between 0 and 65535 (got {self.port})")
        for name in ("max_inputs", "max_chars", "batch_size"):
            if getattr(self, name) < 1:
                raise ServeError(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(self, name)})")
        if self.max_wait_ms < 0:
            raise ServeError(f"--max-wait-ms must not be negative (got {self.max_wait_ms})")
        problem = runtime_problem(self.backend, self.device, self.threads)
        if problem:
            raise ServeError(problem)
        return self

    @property
    def max_body_bytes(self) -> int:
        """Largest accepted body: every input at its limit, each character escaped (\\uXXXX), plus slack."""
        return self.max_inputs * (self.max_chars * 6 + 8) + 65536
