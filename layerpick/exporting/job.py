"""Export a model cut after layer K as a sentence-transformers embedder, proven equal to layer K.

Owns: the order of an export's steps once its request is checked (`request`) and its output locked: load, fit a
transform, take the reference, cut (blocks K.. physically dropped, not masked), save, prove with the parity check
(`parity`), and for `--format onnx` or `--format static` the graph (`onnx.step`) or the table (`static`); the
disk space it needs; and the facts it hands to the documents written beside the weights (`facts`: layerpick.json;
`model_card`: README.md). The file format and the atomic output directory live in `st_layout`. With `--format
static` the proven cut is saved and checked in the staging directory only, and what is moved into place is the
static table distilled from it. An export that fails any step leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from layerpick._util.disk import check_free
from layerpick._util.filenames import METADATA_FILE
from layerpick._util.locks import output_lock
from layerpick._util.outputs import check_output_location
from layerpick._util.versions import library_versions
from layerpick.core import surgery
from layerpick.core.collect import CollectConfig
from layerpick.core.models import LoadedModel, LoadOptions, load_model, resolve_max_seq_length
from layerpick.core.pooling import check_pooling
from layerpick.core.prompts import Prompt, default_pooling
from layerpick.errors import LayerpickError
from layerpick.exporting import parity, prompted, st_layout, static, static_checks, transformed
from layerpick.exporting.annotate import original_source
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.errors import ExportError
from layerpick.exporting.facts import ExportFacts, metadata_json, package_of, reproduce_command
from layerpick.exporting.model_card import CARD_FILE, render_model_card
from layerpick.exporting.onnx import step as onnx_step
from layerpick.exporting.request import (
    ExportPlan,
    ExportRequest,
    check_not_own_source,
    check_plan_against_model,
    check_request,
)

logger = logging.getLogger(__name__)

DOCUMENTS_ALLOWANCE = 1 << 20  # bytes for the configs, model card and layerpick.json an export writes
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")  # not copied as they are: the cut is saved


@dataclass(frozen=True)
class ExportResult:
    output: Path
    layer: int
    num_layers: int
    pooling: str
    representation: str
    normalize: bool
    max_seq_length: int
    parity_max_abs_diff: float
    parity_tolerance: float
    params_full: int
    params_cut: int
    weights_bytes: int
    notes: tuple[str, ...] = ()
    dtype: str = "float32"
    onnx: dict[str, Any] | None = None
    transform: dict[str, Any] | None = None
    static: dict[str, Any] | None = None  # a static export: the table, its distillation, its cosine to the cut

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "output": str(self.output), "notes": list(self.notes)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExportResult:
        return cls(**{**data, "output": Path(data["output"]), "notes": tuple(data.get("notes", ()))})


def export_model(
    model: str,
    layer: int | None,
    output: Path,
    config: ExportConfig = ExportConfig(),
    *,
    load_options: LoadOptions = LoadOptions(),
) -> ExportResult:
    """Cut `model` after layer K (`layer`, else `config.layer`, else from the select report of `config`) and save it
    as a sentence-transformers directory at `output`, after proving it reproduces layer K of the full model on
    the parity texts. `config.normalize` None (and the sequence length, prompts and lower-casing) follow the
    source's own sentence-transformers pipeline when it has one. With a prompt template (the config's, or the
    report's) the saved tokenizer wraps every text in it by itself. `config.format` "onnx" adds the ONNX graph
    (`config.quantize` "int8": and its int8 copy), checked in `onnx.step`; "static" writes instead the static
    table model2vec distils from the proven cut (`export.static`), with `config.static_dims` PCA dimensions."""
    output = Path(output)
    layer = config.layer if layer is None else layer
    request = check_request(model, layer, config, load_options)
    check_not_own_source(model, output)
    st_layout.check_output(output, config.overwrite)
    check_output_location(output, "--output")
    with output_lock(output):
        return cut_and_save(request, output)


def cut_and_save(
    request: ExportRequest, output: Path, *, loaded: LoadedModel | None = None, build_at: Path | None = None
) -> ExportResult:
    """The export once every check passed and the output is locked: load (unless `loaded` is given, which the
    export changes in place), fit, reference, cut, save, prove (and distil, for a static export). The export is
    built and moved into place at `build_at` (default `output`); `output` is where it is said to be (the
    command in its layerpick.json, the result)."""
    model, config, load_options, plan = request.model, request.config, request.load_options, request.plan
    fit_texts, with_onnx, texts, static_request = (
        request.fit_texts,
        request.with_onnx,
        request.texts,
        request.static_request,
    )
    where = Path(build_at or output)
    loaded = loaded if loaded is not None else load_model(model, load_options)
    check_plan_against_model(plan, loaded)
    pooling_mode = check_pooling(plan.pooling or default_pooling(loaded.default_pooling, plan.prompt))
    static_plan = static_checks.check_model(loaded, static_request, pooling_mode) if static_request else None
    unit = loaded.pipeline.normalize if config.normalize is None else config.normalize  # None: as the source's
    seq_length = resolve_max_seq_length(loaded, config.max_seq_length)
    tokenizer = prompted.export_tokenizer(loaded, plan.prompt, seq_length)
    layer_k = parity.reference_embeddings(
        loaded, texts, plan.layer, _parity_config(plan, pooling_mode, seq_length, config.progress)
    )
    edges = (
        None
        if plan.prompt.is_plain
        else prompted.measure_edges(
            loaded, plan.prompt, texts, plan.layer, _parity_config(plan, pooling_mode, seq_length, False)
        )
    )
    prompt_facts = prompted.prompt_facts(loaded, plan.prompt, edges)
    num_layers, params_full = loaded.num_layers, _parameter_count(loaded.model)
    surgery.truncate_(loaded.model, plan.layer)
    logger.info("cut %s after layer %d of %d", model, plan.layer, num_layers)
    fitted = (  # fitted through the cut: layer K's vectors for K blocks' work, not the full model's L
        None
        if fit_texts is None
        else transformed.fit_at_layer(
            loaded, plan.transform, fit_texts, plan.layer, _fit_config(plan, pooling_mode, seq_length, config.progress)
        )
    )
    pooled = transformed.apply(fitted, layer_k)
    reference = torch.nn.functional.normalize(pooled, dim=-1) if unit else pooled
    scale = transformed.working_scale(fitted, layer_k, unit)
    params_cut = _parameter_count(loaded.model)  # before a distillation prunes the embedding rows
    needed = disk_needed(
        loaded.model,
        loaded.path,
        with_onnx,
        config.quantize,
        fitted is not None,
        static_checks.table_bytes(tokenizer, static_plan),
    )
    check_free(where, needed)
    with st_layout.atomic_directory(where, config.overwrite, needed) as work:
        target = work / "export"
        cut = work / "cut" if static_plan else target  # a static export proves the cut here, then distils it
        notes = _save(loaded, tokenizer, plan.prompt, work / "source", cut, pooling_mode, unit, seq_length, fitted)
        device = str(loaded.device)  # the parity check runs the export where the reference was computed
        diff, tolerance = parity.check_parity(cut, texts, reference, load_options.dtype, device=device, scale=scale)
        onnx = (
            onnx_step.write_onnx(loaded.model, target, texts, config.quantize, fitted.affine if fitted else None)
            if with_onnx
            else None
        )
        static_facts = (
            static.export_static(loaded, tokenizer, static_plan, target, texts, pooled, unit, device, config.progress)
            if static_plan
            else None
        )
        command = reproduce_command(
            model,
            str(output),
            layer=plan.layer,
            report_path=plan.report_path,
            pooling=config.pooling,
            normalize=config.normalize,
            max_seq_length=config.max_seq_length,
            load_options=load_options,
            format=config.format,
            quantize=config.quantize,
            static_dims=config.static_dims,
            prompt=None if plan.report_path or plan.prompt.is_plain else plan.prompt.cli_value(),
            transform=None if plan.report_path or plan.transform.is_identity else plan.transform.label,
            fit_texts=config.fit_texts,
            field=config.field,
        )
        facts = ExportFacts(
            model=model,
            source_path=loaded.path,
            revision=loaded.revision,
            layer=plan.layer,
            num_layers=num_layers,
            architecture=type(loaded.model).__name__,
            representation=plan.representation,
            pooling=pooling_mode,
            normalize=unit,
            max_seq_length=seq_length,
            params_full=params_full,
            params_cut=params_cut,
            weights_bytes=_weights_bytes(target),
            parity_max_abs_diff=diff,
            parity_tolerance=tolerance,
            parity_texts=len(texts),
            command=command,
            notes=(*loaded.notes, *notes),
            package=package_of(model),
            report=plan.report.to_json() if plan.report else None,
            report_path=plan.report_path,
            speedup=plan.report.extra.get("speedup") if plan.report else None,
            versions=library_versions(),
            device=device,
            pipeline=_carried(loaded),
            dtype=load_options.dtype,
            onnx=onnx,
            prompt=prompt_facts,
            transform=fitted.to_json() if fitted else None,
            baseline=original_source(loaded.path),
            static=static_facts,
            heal=inherited_heal(loaded.path, plan.layer, num_layers),
        )
        _write_documents(target, facts)
    return _result(output, facts)


def _result(output: Path, facts: ExportFacts) -> ExportResult:
    return ExportResult(
        output,
        facts.layer,
        facts.num_layers,
        facts.pooling,
        facts.representation,
        facts.normalize,
        facts.max_seq_length,
        facts.parity_max_abs_diff,
        facts.parity_tolerance,
        facts.params_full,
        facts.params_cut,
        facts.weights_bytes,
        facts.notes,
        facts.dtype,
        facts.onnx,
        facts.transform,
        facts.static,
    )


def disk_needed(
    cut: torch.nn.Module, source: str | Path, with_onnx: bool, quantize: str | None, mapped: bool, static_bytes: int = 0
) -> int:
    """The bytes an export writes at its peak, estimated from the cut model's weights (the transformers save and
    the sentence-transformers copy, each ONNX graph, the int8 copy a quarter), the source's other files (the
    tokenizer, twice) and a static table (`static_bytes`)."""
    weights = sum(p.numel() * p.element_size() for p in cut.parameters())
    copies = 2 + (1 + mapped if with_onnx else 0) + (0.25 if with_onnx and quantize else 0)
    folder = Path(source)
    side = (
        sum(f.stat().st_size for f in folder.iterdir() if f.is_file() and f.suffix not in WEIGHT_SUFFIXES)
        if folder.is_dir()
        else 0
    )
    return int(weights * copies) + 2 * side + static_bytes + DOCUMENTS_ALLOWANCE


def _parity_config(plan: ExportPlan, pooling: str, max_length: int, progress: bool) -> CollectConfig:
    return parity.parity_config(plan.representation, plan.prompt, pooling, max_length, progress)


def _fit_config(plan: ExportPlan, pooling: str, max_length: int, progress: bool) -> CollectConfig:
    """How the fit texts are pooled: as validation pools them (its batch size; padding is exact)."""
    return dataclasses.replace(_parity_config(plan, pooling, max_length, progress), batch_size=32)


def _weights_dtype(loaded: LoadedModel) -> torch.dtype:
    return next(loaded.model.parameters()).dtype


def _save(
    loaded: LoadedModel,
    tokenizer,
    prompt: Prompt,
    staging: Path,
    target: Path,
    pooling: str,
    normalize: bool,
    max_seq_length: int,
    fitted=None,
) -> list[str]:
    """Save the cut model as a legacy-compatible sentence-transformers directory; return notes for the card."""
    notes = []
    if getattr(tokenizer, "chat_template", None):
        notes.append("the tokenizer's chat template was removed: texts are embedded as they are")
    if not prompt.is_plain:
        notes.append(f"the tokenizer wraps every text in the prompt template {prompt.template!r}: send plain text")
    tokenizer = st_layout.prepare_tokenizer(tokenizer, max_seq_length)
    loaded.model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    if not prompt.is_plain:  # before sentence-transformers reads it back, or a model-specific class drops it
        prompted.finish_layout(staging)
    st_layout.save_sentence_transformer(
        staging,
        target,
        pooling=pooling,
        normalize=normalize,
        max_seq_length=max_seq_length,
        dense=transformed.dense_module(fitted, _weights_dtype(loaded)) if fitted else None,
    )
    if fitted is not None:
        notes.append(
            f"a {fitted.spec.label} transform fitted on {fitted.fit_texts.source} "
            f"({len(fitted.fit_texts.texts)} texts) follows the pooling (a Dense module)"
        )
    st_layout.rewrite_legacy(
        target, loaded.model, tokenizer, pooling=pooling, max_seq_length=max_seq_length, pipeline=loaded.pipeline
    )
    if not prompt.is_plain:
        prompted.finish_layout(target)
    problems = st_layout.layout_problems(target)
    if not prompt.is_plain:
        problems += prompted.prompt_problems(target, tokenizer, max_seq_length)
    if problems:
        raise ExportError(f"the saved directory is incomplete: {'; '.join(problems)}")
    return notes


def inherited_heal(source: str | None, layer: int, num_layers: int) -> dict[str, Any] | None:
    """The heal section of a healed export exported again whole (to ONNX, int8, another dtype): the weights are
    the healed ones, so the section still describes them. Cut further, it is a new cut and the section goes."""
    from layerpick.exporting.metadata import ExportMetadata

    path = Path(source) / METADATA_FILE if source else None
    if layer != num_layers or path is None or not path.is_file():
        return None
    try:
        return ExportMetadata.read(path).heal
    except LayerpickError:
        return None


def _carried(loaded: LoadedModel) -> dict[str, Any] | None:
    """The source's sentence-transformers steps the export keeps (None for a plain transformers source)."""
    return loaded.pipeline.describe() if loaded.pipeline.sentence_transformers else None


def _write_documents(target: Path, facts: ExportFacts) -> None:
    (target / METADATA_FILE).write_text(metadata_json(facts), encoding="utf-8")
    (target / CARD_FILE).write_text(render_model_card(facts), encoding="utf-8")


def _weights_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.glob("*.safetensors"))


def _parameter_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
