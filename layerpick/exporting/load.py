"""Loading a local sentence-transformers directory, and the facts the server and the benchmark read from it.

Owns: loading a directory as a `SentenceTransformer` with a one-line error when it is not one, reading the
`layerpick.json` that `layerpick export` writes beside the model, the embedding size, whether the model
L2-normalises its output, and choosing the backend that runs it (`load_encoder`: torch through
sentence-transformers, or the export's ONNX graph, float or int8, through `onnx.encoder.OnnxEncoder`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from layerpick._util.torch_threads import check_threads
from layerpick.errors import LayerpickError, ModelNotFoundError

logger = logging.getLogger(__name__)

BACKENDS = ("torch", "onnx", "onnx-int8")


def backend_problem(backend: str, device: str = "cpu") -> str | None:
    """Why `backend` cannot run an export on `device` (a one-line message), or None when it can."""
    if backend not in BACKENDS:
        return f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}"
    if backend != "torch" and device not in ("cpu", "auto"):
        return f"the {backend} backend runs on the CPU (onnxruntime's CPU provider): drop --device {device}"
    return None


def runtime_problem(backend: str, device: str, threads: int | None) -> str | None:
    """Why an export cannot run with these settings (bench and serve check them before any model loads), or
    None; an unknown or missing device raises its own error here."""
    problem = backend_problem(backend, device) or check_threads(threads)
    if problem is None:
        from layerpick.core.devices import resolve_device

        resolve_device(device)
    return problem


def check_backend(backend: str, device: str = "cpu") -> str:
    """`backend`, or a one-line error for an unknown one or an ONNX backend on another device than the CPU."""
    problem = backend_problem(backend, device)
    if problem:
        raise LayerpickError(problem)
    return backend


def load_encoder(directory: str | Path, device: str = "cpu", backend: str = "torch"):
    """The export in `directory` run by `backend`: a SentenceTransformer, or an OnnxEncoder with the same
    `encode` interface."""
    if check_backend(backend, device) == "torch":
        return load_sentence_transformer(directory, device)
    from layerpick.exporting.onnx.encoder import OnnxEncoder
    from layerpick.exporting.onnx.graph import FLOAT_FILE, INT8_FILE

    path = Path(directory).expanduser()
    if not (path / "modules.json").is_file():
        raise ModelNotFoundError(f"not a sentence-transformers directory (no modules.json): {path}")
    return OnnxEncoder(path, INT8_FILE if backend == "onnx-int8" else FLOAT_FILE)


def load_sentence_transformer(directory: str | Path, device: str = "cpu"):
    """A SentenceTransformer from a local directory; a one-line error when it is not one."""
    from sentence_transformers import SentenceTransformer

    from layerpick.core.load_errors import loading
    from layerpick.core.devices import resolve_device

    path = Path(directory).expanduser()
    if not (path / "modules.json").is_file():
        raise ModelNotFoundError(f"not a sentence-transformers directory (no modules.json): {path}")
    device = resolve_device(device)
    with loading(path, what="sentence-transformers model"):
        return SentenceTransformer(str(path), device=device)


def embedding_dimension(model) -> int:
    """The sentence embedding size (sentence-transformers 6 renamed the accessor)."""
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


def is_normalized(model) -> bool:
    """Whether the model's last step L2-normalises the sentence embedding."""
    if hasattr(model, "normalizes"):  # an OnnxEncoder
        return bool(model.normalizes)
    return any(type(module).__name__ == "Normalize" for module in model)


def dense_module(directory: str | Path):
    """The (weight (out, in), bias (out,)) arrays of an export's Dense module (its post-pooling transform), None
    without one."""
    from layerpick.exporting.onnx.encoder import read_dense

    return read_dense(Path(directory))
