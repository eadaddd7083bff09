"""`layerpick serve`: an OpenAI-compatible embeddings server for a sentence-transformers directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from layerpick.cli import options as opt
from layerpick.cli.options import default
from layerpick.serving.config import ServeConfig
from layerpick.serving.server import EmbeddingServer
from layerpick.serving.server import serve as run_server


def serve(
    directory: Annotated[Path, typer.Argument(help="A sentence-transformers directory (e.g. `layerpick export`'s).")],
    host: Annotated[
        str, typer.Option(help="Interface to bind; 0.0.0.0 opens it to the network.", envvar="LAYERPICK_HOST")
    ] = default(ServeConfig, "host"),
    port: Annotated[int, typer.Option(help="TCP port (0 picks a free one).", envvar="LAYERPICK_PORT")] = default(
        ServeConfig, "port"
    ),
    max_inputs: Annotated[int, typer.Option(help="Most inputs in one request (more: 413).")] = default(
        ServeConfig, "max_inputs"
    ),
    max_chars: Annotated[int, typer.Option(help="Most characters in one input (more: 413).")] = default(
        ServeConfig, "max_chars"
    ),
    batch_size: opt.BatchSize = default(ServeConfig, "batch_size"),
    max_wait_ms: Annotated[float, typer.Option(help="How long the worker waits for more requests to batch.")] = default(
        ServeConfig, "max_wait_ms"
    ),
    device: opt.Device = default(ServeConfig, "device"),
    model_name: Annotated[
        Optional[str],
        typer.Option(
            help="`model` name to report (default: <source>-layer<K> for a layerpick export, else the directory name)."
        ),
    ] = default(ServeConfig, "model_name"),
    strict_model: Annotated[
        bool,
        typer.Option(
            "--strict-model",
            help="Refuse (404) a request whose `model` is not the served model's name; without it any "
            "`model` is answered, and every response names the served model.",
            envvar="LAYERPICK_STRICT_MODEL",
        ),
    ] = default(ServeConfig, "strict_model"),
    threads: opt.Threads = default(ServeConfig, "threads"),
    drain_timeout_s: Annotated[
        float,
        typer.Option(
            "--drain-timeout",
            help="Seconds a stop signal leaves the requests in flight to finish; what cannot finish is answered 503 "
            "with Retry-After before then.",
            envvar="LAYERPICK_DRAIN_TIMEOUT",
        ),
    ] = default(ServeConfig, "drain_timeout_s"),
    backend: opt.Backend = default(ServeConfig, "backend"),
) -> None:
    """Serve embeddings over HTTP: POST /v1/embeddings (OpenAI format), GET /health. SIGTERM, SIGHUP or Ctrl-C stops it
    after the requests in flight are answered.

    `dimensions` in a request keeps the first n dimensions, re-normalised when the model normalises its output.

    Example: layerpick serve ./smollm2-k15 --port 8080 --threads 4
    """
    run_server(directory, opt.build(ServeConfig, locals()), on_ready=_announce)
    typer.echo("layerpick: server stopped", err=True)


def _announce(server: EmbeddingServer) -> None:
    typer.echo(
        f"layerpick: serving {server.model_name} ({server.dimension} dimensions, {server.threads} "
        f"{'torch' if server.config.backend == 'torch' else server.config.backend + ' (onnxruntime)'} threads)"
        f" at {server.url}"
        f"  (POST {server.url}/v1/embeddings, GET {server.url}/health; Ctrl-C to stop)",
        err=True,
    )
