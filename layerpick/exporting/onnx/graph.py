"""The ONNX graph of a cut model: where it lives in an export, how it is made, how it is quantised to int8.

Owns: the file names (`onnx/model.onnx`, `onnx/model_quantized.onnx`), the check that the optional `onnx` extra
is installed, tracing the cut model with `torch.onnx.export` (the torch.export-based exporter, which needs
`onnxscript`; optimum's exporter pins transformers < 4.58 and cannot run beside transformers 5), and dynamic
int8 quantisation with `onnxruntime.quantization`, keeping float32 the MatMuls whose inputs carry outliers
(`outlier_matmuls`). Checking what the graphs compute is `step`'s job.

The graph maps the tokenizer's inputs to token states: inputs `input_ids`, `attention_mask` and, when the
tokenizer makes them, `token_type_ids` (int64, batch x sequence, both axes dynamic); output `last_hidden_state`
(batch x sequence x hidden). That is the contract of text-embeddings-inference's ONNX Runtime backend
(huggingface/text-embeddings-inference, `backends/ort/src/lib.rs`: it opens `model.onnx`, else
`onnx/model.onnx`; always feeds `input_ids` and `attention_mask`, feeds `token_type_ids` only when the graph
declares it, reads `last_hidden_state` (or `token_embeddings`) and pools itself) and of optimum's
`ORTModelForFeatureExtraction`, which sentence-transformers' `backend="onnx"` loads from `onnx/model.onnx`.
"""

from __future__ import annotations

import inspect
import logging
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

from layerpick._util.extras import missing_extra
from layerpick.errors import LayerpickError

logger = logging.getLogger(__name__)

GRAPH_DIR = "onnx"
FLOAT_FILE = f"{GRAPH_DIR}/model.onnx"
INT8_FILE = f"{GRAPH_DIR}/model_quantized.onnx"  # the name infinity's optimum engine prefers on CPU
# With a post-pooling transform: the graph whose token states already carry the affine map (it commutes with
# mean, CLS and last-token pooling), for readers that pool the graph output and skip modules.json's Dense module
# (TEI's ONNX backend, infinity's optimum engine). Its name is one that no reader picks up by itself: a
# `model.onnx` beside `onnx/model.onnx` is taken by sentence-transformers' ONNX backend (which then applies the
# Dense module a second time: measured in benchmarks/results/engines_transforms.md), so such a reader is given
# this file under the name it expects (docs/transforms.md, "Calibrated embeddings").
MAPPED_FILE = f"{GRAPH_DIR}/model_mapped.onnx"
OUTPUT_NAME = "last_hidden_state"
INPUT_ORDER = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 18
SAMPLE_TOKENS = 8  # the traced example stays short: inside every position limit, few unrolled steps
OUTLIER_RATIO = 60.0  # a MatMul whose input peaks above this many times its RMS stays float32 in the int8 graph
EXTERNAL_DATA_BYTES = 1_800_000_000  # one protobuf file holds at most 2 GB; larger weights go beside it
EXPORT_PACKAGES = ("onnx", "onnxruntime", "onnxscript")  # the `onnx` extra of pyproject.toml
RUNTIME_PACKAGES = ("onnxruntime",)


class OnnxExportError(LayerpickError):
    """An ONNX export that cannot be made: the extra is missing, the model cannot be traced, a check failed."""


def require(packages: Sequence[str] = EXPORT_PACKAGES, purpose: str = "--format onnx") -> None:
    """Raise a one-line error naming what to install when any of `packages` is missing."""
    message = missing_extra("onnx", packages, purpose)
    if message:
        raise OnnxExportError(message)


def graph_inputs(model: nn.Module, tokenizer) -> list[str]:
    """The graph's inputs: what the tokenizer makes and the model's forward accepts, in TEI's order."""
    accepted = set(inspect.signature(model.forward).parameters)
    made = set(getattr(tokenizer, "model_input_names", None) or ("input_ids", "attention_mask"))
    names = [name for name in INPUT_ORDER if name in accepted and (name in made or name != "token_type_ids")]
    if names[:2] != ["input_ids", "attention_mask"]:
        raise OnnxExportError(
            f"{type(model).__name__} does not take input_ids and attention_mask: no ONNX graph for it"
        )
    return names


class _TokenStates(nn.Module):
    """The model as the graph sees it: named token inputs in, `last_hidden_state` out."""

    def __init__(self, model: nn.Module, names: Sequence[str], affine=None):
        super().__init__()
        self.model, self.names = model, tuple(names)
        self.mapped = affine is not None
        if self.mapped:  # y = h @ W.T + b on every token state
            self.register_buffer("weight", torch.tensor(affine.weight, dtype=torch.float32))
            self.register_buffer("bias", torch.tensor(affine.bias, dtype=torch.float32))

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        given = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
        states = self.model(**{name: given[name] for name in self.names}).last_hidden_state
        return states @ self.weight.T + self.bias if self.mapped else states


def export_graph(model: nn.Module, tokenizer, path: Path, sample_texts: Sequence[str], affine=None) -> list[str]:
    """Trace the (float32, CPU) `model` into an ONNX graph at `path` (with `affine`, a `core.transform.AffineMap`,
    applied to every token state); return the graph's input names."""
    names = graph_inputs(model, tokenizer)
    limit = min(SAMPLE_TOKENS, int(getattr(tokenizer, "model_max_length", SAMPLE_TOKENS) or SAMPLE_TOKENS))
    sample = tokenizer(list(sample_texts), padding=True, truncation=True, max_length=limit, return_tensors="pt")
    args = tuple(sample[name] if name in sample else torch.zeros_like(sample["input_ids"]) for name in names)
    dynamic = {name: {0: torch.export.Dim.DYNAMIC, 1: torch.export.Dim.DYNAMIC} for name in names}
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _quiet_exporter():
            torch.onnx.export(
                _TokenStates(model, names, affine).eval(),
                args,
                str(path),
                input_names=names,
                output_names=[OUTPUT_NAME],
                dynamic_shapes=dynamic,
                opset_version=OPSET,
                dynamo=True,
                external_data=weights > EXTERNAL_DATA_BYTES,
                verbose=False,
            )
    except Exception as error:  # noqa: BLE001 - the exporter raises many types; the user gets one line
        raise OnnxExportError(
            f"cannot export {type(model).__name__} to ONNX: torch.onnx.export failed ({_reason(error)})"
        ) from error
    logger.info("wrote %s (inputs %s)", path, ", ".join(names))
    return names


class _quiet_exporter:
    """Silence the exporter's and the quantiser's own warnings and log lines (missing torchvision ops,
    deprecations, onnxruntime's advice to pre-process, which it logs on the root logger)."""

    def __enter__(self):
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        self._loggers = [(log, log.level) for log in (logging.getLogger("torch.onnx"), logging.getLogger())]
        for log, _ in self._loggers:
            log.setLevel(logging.ERROR)
        root = logging.getLogger()
        self._null = logging.NullHandler() if not root.handlers else None  # or logging.warning() configures it
        if self._null:
            root.addHandler(self._null)
        return self

    def __exit__(self, *exc):
        for log, level in self._loggers:
            log.setLevel(level)
        if self._null:
            logging.getLogger().removeHandler(self._null)
        return self._warnings.__exit__(*exc)


def _reason(error: BaseException) -> str:
    """A short reason: the innermost cause's most specific line."""
    while error.__cause__ is not None:
        error = error.__cause__
    lines = [line.strip(" -") for line in str(error).splitlines() if line.strip(" -")]
    specific = [line for line in lines if not line.startswith(("Refer to", "(Refer", "Failed to export"))]
    specific = specific or lines or [type(error).__name__]
    text = specific[0]
    if text.endswith(":") and len(specific) > 1:  # a heading: its first item says what went wrong
        text = specific[1]
    return text if len(text) <= 240 else text[:237] + "..."


def quantize_int8(source: Path, target: Path, keep_float: Sequence[str] = ()) -> None:
    """Dynamic int8 quantisation (int8 weights with one scale per output channel, activations quantised per
    call) of the graph at `source`, leaving the nodes named in `keep_float` in float32."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    external = len(graph_files(source.parent, source.name)) > 1
    try:
        with _quiet_exporter():
            quantize_dynamic(
                str(source),
                str(target),
                weight_type=QuantType.QInt8,
                per_channel=True,
                use_external_data_format=external,
                nodes_to_exclude=list(keep_float),
            )
    except Exception as error:  # noqa: BLE001
        raise OnnxExportError(f"int8 quantisation failed: {_reason(error)}") from error
    logger.info("wrote %s (%d nodes kept in float32)", target, len(keep_float))


def outlier_matmuls(
    source: Path, batches: Sequence[tuple[dict, np.ndarray]], ratio: float = OUTLIER_RATIO
) -> tuple[list[str], int]:
    """The weight MatMuls of the graph at `source` whose input, on the calibration `batches` ((feed, mask)
    pairs), peaks above `ratio` times its root mean square; and how many weight MatMuls there are.

    Dynamic quantisation gives each activation one int8 scale per call: an input whose peak is 60 times its
    RMS (the massive activations that decoders feed their MLP down-projections) keeps a handful of levels for
    its typical values, so those MatMuls stay float. A graph with external weights is not probed ([])."""
    import onnx
    import onnxruntime as ort

    if len(graph_files(source.parent, source.name)) > 1:
        return [], 0
    model = onnx.load(str(source))
    constants = {tensor.name for tensor in model.graph.initializer}
    nodes = [
        node
        for node in model.graph.node
        if node.op_type in ("MatMul", "Gemm") and len(node.input) > 1 and node.input[1] in constants
    ]
    probed = sorted({node.input[0] for node in nodes} - {output.name for output in model.graph.output})
    model.graph.output.extend(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None) for name in probed)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    del model
    peak, squares, count = dict.fromkeys(probed, 0.0), dict.fromkeys(probed, 0.0), dict.fromkeys(probed, 0)
    for feed, mask in batches:
        for name, values in zip(probed, session.run(probed, feed)):
            values = values[mask.astype(bool)] if values.shape[:2] == mask.shape else values
            values = values.astype(np.float64)
            peak[name] = max(peak[name], float(np.abs(values).max(initial=0.0)))
            squares[name] += float((values**2).sum())
            count[name] += values.size
    rms = {name: (squares[name] / count[name]) ** 0.5 if count[name] else 0.0 for name in probed}
    kept = [node.name for node in nodes if rms.get(node.input[0]) and peak[node.input[0]] > ratio * rms[node.input[0]]]
    return kept, len(nodes)


def graph_files(directory: Path, file: str) -> list[Path]:
    """The graph file and the external weight files beside it (if any)."""
    path = Path(directory) / file
    extra = sorted(p for p in path.parent.glob(f"{path.name}.data*") if p.is_file())
    return [path, *extra] if path.is_file() else []


def graph_bytes(directory: Path, file: str) -> int:
    return sum(p.stat().st_size for p in graph_files(directory, file))
