"""The ONNX part of `layerpick export --format onnx [--quantize int8]`, run inside the export's staging directory.

Owns: checking the request before any model is loaded (formats, quantisations, the optional extra, a float32
CPU model), writing the graph beside the sentence-transformers files, proving it against the torch export
(token states and sentence embeddings equal to 1e-4 of the largest value, on the parity texts), the int8
graph (MatMuls fed by outliers on calibration texts kept float32) and its per-text cosine against the float
graph on the parity texts (at least 0.99, else a refusal), and the `onnx`
section of `layerpick.json`. A failed check raises, and the export's atomic directory leaves nothing behind.
"""

from __future__ import annotations

import logging
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from torch import nn

from layerpick.exporting.onnx import graph as onnx_graph
from layerpick.exporting.onnx.graph import FLOAT_FILE, INT8_FILE, MAPPED_FILE, OnnxExportError

logger = logging.getLogger(__name__)

FORMATS = ("sentence-transformers", "onnx", "static")  # static: `export.static`
QUANTIZATIONS = ("int8",)
PARITY_TOLERANCE = 1e-4  # max |onnx - torch| / max |torch|, token states and sentence embeddings
INT8_MIN_COSINE = 0.99
PARITY_BATCH_SIZE = 3
CALIBRATION_TEXTS = 32  # texts of the embedded calibration set that find the int8 graph's outlier inputs


class OnnxParityError(OnnxExportError):
    """The ONNX graph does not reproduce the torch export (or its int8 copy strays too far from it)."""


def check_request(format: str, quantize: str | None, dtype: str, device_map: str | None) -> bool:
    """Whether an ONNX graph is wanted; a one-line error for a request that cannot be carried out."""
    if format not in FORMATS:
        raise OnnxExportError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    if quantize is not None and quantize not in QUANTIZATIONS:
        raise OnnxExportError(f"unknown quantization {quantize!r}; choose one of {', '.join(QUANTIZATIONS)}")
    if format != "onnx":
        if quantize is not None:
            raise OnnxExportError("--quantize applies to the ONNX graph: add --format onnx")
        return False
    onnx_graph.require()
    if dtype != "float32":
        raise OnnxExportError(
            f"--format onnx writes a float32 graph (text-embeddings-inference's ONNX backend "
            f"runs only float32): drop --dtype {dtype}"
        )
    if device_map is not None:
        raise OnnxExportError("--format onnx traces the model on one device: drop --device-map")
    return True


def write_onnx(
    model: nn.Module, target: Path, texts: Sequence[str], quantize: str | None, affine=None
) -> dict[str, Any]:
    """Write the graph(s) of the cut `model` into the export directory `target`, check them, and return
    the `onnx` section of layerpick.json. With `affine` (the export's post-pooling transform) also the graph
    that carries the map in its token states (`MAPPED_FILE`), checked by pooling its output alone."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    from layerpick.exporting.onnx.encoder import OnnxEncoder

    model = model.to("cpu")
    tokenizer = AutoTokenizer.from_pretrained(str(target))  # the exported tokenizer: what every reader uses
    inputs = onnx_graph.export_graph(model, tokenizer, target / FLOAT_FILE, _sample(texts))
    reference = SentenceTransformer(str(target), device="cpu")
    graph = OnnxEncoder(target, FLOAT_FILE)
    section = {
        **_graph_file(target, FLOAT_FILE),
        "opset": onnx_graph.OPSET,
        "inputs": inputs,
        "output": onnx_graph.OUTPUT_NAME,
        "exporter": _exporter(),
        "parity": check_parity(reference, graph, texts),
    }
    if quantize == "int8":
        section["int8"] = _int8(target, graph, texts)
    if affine is not None:
        section["mapped"] = _mapped(model, tokenizer, target, texts, reference, affine)
    return section


def _mapped(model: nn.Module, tokenizer, target: Path, texts: Sequence[str], reference, affine) -> dict[str, Any]:
    """The graph with the transform inside, pooled without the Dense module: the same embeddings."""
    from layerpick.exporting.onnx.encoder import OnnxEncoder

    onnx_graph.export_graph(model, tokenizer, target / MAPPED_FILE, _sample(texts), affine)
    diff = _mapped_parity(reference, OnnxEncoder(target, MAPPED_FILE, apply_dense=False), texts)
    return {
        **_graph_file(target, MAPPED_FILE),
        "what": "token states with the post-pooling transform applied to each (it commutes with the pooling), "
        "for readers that pool the graph output and skip modules.json's Dense module",
        "embeddings_max_rel_diff": diff,
        "tolerance": PARITY_TOLERANCE,
    }


def _mapped_parity(reference, pooled, texts: Sequence[str]) -> float:
    """The mapped graph's pooled output against the torch export's embeddings (relative to the largest value);
    raise when it differs by more than PARITY_TOLERANCE."""
    want = reference.encode(list(texts), batch_size=PARITY_BATCH_SIZE, convert_to_numpy=True, show_progress_bar=False)
    diff = _relative(np.asarray(want), pooled.encode(list(texts), batch_size=PARITY_BATCH_SIZE))
    if not diff <= PARITY_TOLERANCE:
        raise OnnxParityError(
            f"ONNX parity failed: the graph with the transform inside differs from the torch "
            f"export by {diff:.3g} of the largest value; nothing was written"
        )
    return diff


def _graph_file(target: Path, file: str) -> dict[str, Any]:
    """A graph's file name and its size on disk, the first keys of its record in the `onnx` section."""
    return {"file": file, "bytes": onnx_graph.graph_bytes(target, file)}


def _sample(texts: Sequence[str]) -> list[str]:
    """The shortest and the longest text: the traced batch has padding and more than one token."""
    ordered = sorted(texts, key=len)
    return [ordered[0], ordered[-1] if len(ordered) > 1 else ordered[0] + " " + ordered[0]]


def check_parity(reference, graph, texts: Sequence[str]) -> dict[str, Any]:
    """Token states and sentence embeddings of the graph against the torch export; raise when either
    differs by more than PARITY_TOLERANCE of the largest value."""
    texts = list(texts)
    want_tokens = reference.encode(
        texts, output_value="token_embeddings", batch_size=PARITY_BATCH_SIZE, show_progress_bar=False
    )
    got_tokens = graph.token_embeddings(texts, batch_size=PARITY_BATCH_SIZE)
    want = reference.encode(texts, batch_size=PARITY_BATCH_SIZE, convert_to_numpy=True, show_progress_bar=False)
    got = graph.encode(texts, batch_size=PARITY_BATCH_SIZE)
    tokens = max(_relative(np.asarray(w.float().cpu()), g) for w, g in zip(want_tokens, got_tokens))
    sentences = _relative(np.asarray(want), got)
    logger.info("onnx parity: token states %.3g, embeddings %.3g (relative to the largest value)", tokens, sentences)
    worst = max(tokens, sentences)
    if not worst <= PARITY_TOLERANCE:
        raise OnnxParityError(
            f"ONNX parity failed: the graph differs from the torch export by {worst:.3g} of the "
            f"largest value (tolerance {PARITY_TOLERANCE:g}); nothing was written"
        )
    return {
        "reference": "the sentence-transformers export (torch)",
        "texts": len(texts),
        "token_states_max_rel_diff": tokens,
        "embeddings_max_rel_diff": sentences,
        "tolerance": PARITY_TOLERANCE,
        "passed": True,
    }


def _relative(want: np.ndarray, got: np.ndarray) -> float:
    if want.shape != got.shape:
        raise OnnxParityError(f"ONNX parity failed: shape {got.shape} where the torch export gives {want.shape}")
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-12))


def _int8(target: Path, graph, texts: Sequence[str]) -> dict[str, Any]:
    """Quantise the float graph, keeping float the MatMuls whose inputs carry outliers on calibration texts
    (not the parity texts, which then check the result)."""
    from layerpick.core.calibration import load_calibration
    from layerpick.exporting.onnx.encoder import OnnxEncoder

    calibration = load_calibration(limit=CALIBRATION_TEXTS, seed=0).texts
    batches = [graph.feed(calibration[start : start + 8]) for start in range(0, len(calibration), 8)]
    kept, matmuls = onnx_graph.outlier_matmuls(target / FLOAT_FILE, batches)
    onnx_graph.quantize_int8(target / FLOAT_FILE, target / INT8_FILE, kept)
    quantized = OnnxEncoder(target, INT8_FILE)
    cosines = cosine_rows(graph.encode(list(texts)), quantized.encode(list(texts)))
    lowest = min(cosines)
    logger.info("int8: cosine to the float graph min %.4f over %d texts", lowest, len(cosines))
    if not lowest >= INT8_MIN_COSINE:
        raise OnnxParityError(
            f"--quantize int8 refused: the int8 graph's cosine to the float export falls to "
            f"{lowest:.4f} on the parity texts (at least {INT8_MIN_COSINE} required)"
        )
    return {
        **_graph_file(target, INT8_FILE),
        "method": "onnxruntime.quantization.quantize_dynamic (int8 weights per output channel, activations "
        "quantized per call)",
        "kept_float32": {
            "matmuls": len(kept),
            "of": matmuls,
            "outlier_ratio": onnx_graph.OUTLIER_RATIO,
            "calibration_texts": len(calibration),
        },
        "cosine_to_float": [round(value, 6) for value in cosines],
        "min_cosine": lowest,
        "threshold": INT8_MIN_COSINE,
    }


def cosine_rows(a: np.ndarray, b: np.ndarray) -> list[float]:
    """Cosine of each row of `a` with the same row of `b`."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    norms = np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-300)
    return [float(value) for value in (a * b).sum(axis=1) / norms]


def _exporter() -> str:
    versions = []
    for name in ("torch", "onnxscript", "onnx", "onnxruntime"):
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return "torch.onnx.export (torch.export-based); " + ", ".join(versions)
