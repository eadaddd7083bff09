"""Export a model cut after layer K as a sentence-transformers embedder, proven equal to layer K.

Owns: what to export (a manual K, or the layer, pooling and representation of a `layerpick select`
report for the same model), the cut (blocks K.. physically dropped, not masked), the order of the steps,
and the parity check that is the invariant of the whole tool: the saved directory, loaded by
sentence-transformers, encodes texts exactly as `layerpick.core.collect` pools layer K of the full model; an
export that fails it leaves nothing behind. The file format and the atomic output directory live in
`st_layout`, the documents written beside the weights (layerpick.json, README.md) in `model_card`. With
`--format static` the proven cut is saved and checked in the staging directory only, and what is moved into
place is the static table `export.static` distils from it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from layerpick._util.disk import check_free
from layerpick._util.locks import output_lock
from layerpick._util.outputs import check_output_location
from layerpick._util.versions import library_versions
from layerpick.core import surgery
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.collect_config import REPRESENTATIONS
from layerpick.core.models import LoadedModel, LoadOptions, load_model, resolve_max_seq_length
from layerpick.core.pooling import check_pooling
from layerpick.core.prompts import (
    PLAIN,
    Prompt,
    default_pooling,
    parse_prompt,
    prompt_from_json,
)
from layerpick.errors import LayerpickError, LayerRangeError, ReportFormatError
from layerpick.core.calibration import check_field
from layerpick.core.fit_texts import AUTO, expand_auto, fit_field
from layerpick.core.transform import IDENTITY, TransformSpec, parse_transforms, transform_from_json
from layerpick.exporting import model_card, prompted, st_layout, static, transformed
from layerpick.exporting.onnx import step as onnx_step
from layerpick.exporting.config import ExportConfig
from layerpick.selection.result import SelectReport, read_select_report

logger = logging.getLogger(__name__)

PARITY_BATCH_SIZE = 3  # small batches of unequal texts: padding is exercised in both encoders
PARITY_TOLERANCE = {"float32": 1e-5, "float16": 5e-3, "bfloat16": 3e-2}  # relative to the largest |value|
DOCUMENTS_ALLOWANCE = 1 << 20  # bytes for the configs, model card and layerpick.json an export writes
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")  # not copied as they are: the cut is saved
DEFAULT_PARITY_TEXTS = (
    "A cat.",
    "The quick brown fox jumps over the lazy dog.",
    "How many layers does a language model need to produce a good sentence embedding?",
    "Prices rose 3.2% in March, the statistics office said on Tuesday.",
    "Hello!",
    "Layer selection scores every intermediate representation without labels, picks one, and cuts the model "
    "after it, so the exported embedder is smaller and faster while producing exactly that representation.",
    "Où est la gare ? Ich weiß es nicht.",
    "def add(a, b):\n    return a + b",
)
# Beyond the keys every select report has, an export needs to know how the layer was pooled.
EXPORT_KEYS = ("pooling",)


class ExportError(LayerpickError):
    """An export request that cannot be carried out (a bad or mismatched report, an unexportable choice)."""


class ParityError(ExportError):
    """The saved directory does not reproduce layer K of the full model."""


@dataclass(frozen=True)
class ExportPlan:
    """What to export: the layer, pooling and representation, and the report they came from (if any)."""

    layer: int
    pooling: str | None
    representation: str
    report: SelectReport | None = None
    report_path: str | None = None
    prompt: Prompt = PLAIN
    transform: TransformSpec = IDENTITY


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


@dataclass(frozen=True)
class ExportRequest:
    """An export checked before any model loads: what `cut_and_save` needs besides the output."""

    model: str
    config: ExportConfig
    load_options: LoadOptions
    plan: ExportPlan
    fit_texts: Any
    with_onnx: bool
    texts: tuple[str, ...]
    static_request: static.StaticRequest | None = None


def check_request(
    model: str, layer: int | None, config: ExportConfig, load_options: LoadOptions = LoadOptions()
) -> ExportRequest:
    """Every check of an export that needs no weights and no output (`export_model` checks the output)."""
    plan = make_plan(
        model,
        layer,
        config.report,
        config.pooling,
        config.representation,
        config.prompt,
        export_transform(
            config.transform, model, load_options, config.fit_texts, config.report is not None, config.field
        ),
    )
    plan = static.table_plan(config, plan)
    source = transformed.fit_source(config.fit_texts, plan.report)
    check_field(
        config.field,
        {} if plan.transform.is_identity else {"--fit-texts": source},
        " (--field reads the fit texts of a --transform)",
    )
    fit_texts = transformed.prepare_fit_texts(
        plan.transform,
        source,
        plan.representation,
        model,
        load_options,
        plan.report.transform if plan.report else None,
        fit_field(config.fit_texts, config.field, plan.report),
    )
    with_onnx = onnx_step.check_request(config.format, config.quantize, load_options.dtype, load_options.device_map)
    static_request = static.check_request(config, plan, load_options, model)
    texts = _check_texts(config.parity_texts)
    load_options.check()
    if config.max_seq_length is not None and config.max_seq_length < 1:
        raise ExportError(f"--max-seq-length must be at least 1 (got {config.max_seq_length})")
    return ExportRequest(model, config, load_options, plan, fit_texts, with_onnx, texts, static_request)


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
    _check_plan_against_model(plan, loaded)
    pooling_mode = check_pooling(plan.pooling or default_pooling(loaded.default_pooling, plan.prompt))
    static_plan = static.check_model(loaded, static_request, pooling_mode) if static_request else None
    unit = loaded.pipeline.normalize if config.normalize is None else config.normalize  # None: as the source's
    seq_length = resolve_max_seq_length(loaded, config.max_seq_length)
    tokenizer = prompted.export_tokenizer(loaded, plan.prompt, seq_length)
    layer_k = _reference(loaded, plan, pooling_mode, seq_length, texts, config.progress)
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
        static.table_bytes(tokenizer, static_plan),
    )
    check_free(where, needed)
    with st_layout.atomic_directory(where, config.overwrite, needed) as work:
        target = work / "export"
        cut = work / "cut" if static_plan else target  # a static export proves the cut here, then distils it
        notes = _save(loaded, tokenizer, plan.prompt, work / "source", cut, pooling_mode, unit, seq_length, fitted)
        device = str(loaded.device)  # the parity check runs the export where the reference was computed
        diff, tolerance = check_parity(cut, texts, reference, load_options.dtype, device=device, scale=scale)
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
        command = model_card.reproduce_command(
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
        facts = model_card.ExportFacts(
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
            package=model_card.package_of(model),
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
            baseline=model_card.original_source(loaded.path),
            static=static_facts,
            heal=inherited_heal(loaded.path, plan.layer, num_layers),
        )
        _write_documents(target, facts)
    return _result(output, facts)


def _result(output: Path, facts: model_card.ExportFacts) -> ExportResult:
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


def check_not_own_source(model: str, output: Path) -> None:
    """Refuse, before loading, an output that is, contains or lies inside the model it is cut from (the
    export would replace what it reads)."""
    source = local_source(model)
    if source is None:
        return
    target = Path(os.path.abspath(Path(output).expanduser()))
    if target == source or target in source.parents or source in target.parents:
        where = "is" if target == source else ("contains" if target in source.parents else "is inside")
        raise ExportError(
            f"--output {output} {where} the model being exported ({source}); an export cannot "
            "replace its own source: choose another --output"
        )


def local_source(model: str) -> Path | None:
    """The local file or directory `model` is read from (a path, or a packaged alias), or None (a hub id)."""
    from layerpick.core import registry

    if registry.get_entry(model) is not None:
        return Path(os.path.abspath(registry.resolve_alias(model)[1].directory))
    path = Path(model).expanduser()
    return Path(os.path.abspath(path)) if path.exists() else None


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


def make_plan(
    model: str,
    layer: int | None,
    report: Path | None,
    pooling: str | None,
    representation: str,
    prompt: str | Prompt | None = None,
    transform: str | None = None,
) -> ExportPlan:
    """The export request, checked before any model is loaded."""
    asked = prompt if isinstance(prompt, Prompt) else (None if prompt is None else parse_prompt(prompt))
    asked_transform = None if transform is None else one_transform(transform)
    if (layer is None) == (report is None):
        raise ExportError("give exactly one of a layer (--layer K) or a select report (--report report.json)")
    if representation not in REPRESENTATIONS:
        raise ExportError(f"unknown representation {representation!r}; choose one of {', '.join(REPRESENTATIONS)}")
    if pooling is not None:
        check_pooling(pooling)
    if report is None:
        if layer < 1:
            raise LayerRangeError(
                f"layer {layer} is out of range: an export keeps the first K blocks, 1 <= K <= the model's layer count"
            )
        return ExportPlan(layer, pooling, representation, prompt=asked or PLAIN, transform=asked_transform or IDENTITY)
    data = read_report(Path(report))
    _check_report_model(data, model, report)
    for name, given, chosen in (
        ("pooling", pooling, data.pooling),
        ("representation", representation, data.representation),
    ):
        if given is not None and given != chosen and not (name == "representation" and given == "exported"):
            raise ExportError(f"--{name} {given} contradicts the report, which selected with {name} {chosen}")
    chosen_prompt = prompt_from_json(data.prompt)
    if asked is not None and asked.template != chosen_prompt.template:
        raise ExportError(
            f"--prompt {asked.label} contradicts the report, which selected with prompt {chosen_prompt.label}"
        )
    chosen_transform = transform_from_json(data.transform)
    if asked_transform is not None and asked_transform != chosen_transform:
        raise ExportError(
            f"--transform {asked_transform.label} contradicts the report, which selected with "
            f"transform {chosen_transform.label}"
        )
    return ExportPlan(
        data.selected_layer, data.pooling, data.representation, data, str(report), chosen_prompt, chosen_transform
    )


def export_transform(
    value: str | None,
    model: str,
    load_options: LoadOptions,
    fit_source: Any,
    from_report: bool,
    field: str | None = None,
) -> str | None:
    """The transform an export ships, with `auto` resolved in the user's words: from a report, `auto` is the
    report's own choice (None); with --layer it resolves as select resolves it (`none` for a trained embedder)
    and must come to one transform, else the error says that choosing between several is select's job."""
    if value is None or value.strip().lower() != AUTO:
        return value
    if from_report:
        return None
    resolved = expand_auto(value, model, load_options, fit_source, field)
    if len(parse_transforms(resolved)) > 1:
        both = " and ".join(resolved.split(","))
        raise ExportError(
            f"--transform {value} is select's choice between {both}, made by scoring them; an export ships one "
            f"transform: name it (--transform {resolved.split(',')[-1]}) or export a select report's choice "
            "(--report report.json)"
        )
    return resolved


def one_transform(value: str) -> TransformSpec:
    """Exactly one transform name: an export ships one."""
    specs = parse_transforms(value)
    if len(specs) != 1:
        raise ExportError(f"--transform takes one transform for an export (got {value!r})")
    return specs[0]


def read_report(path: Path) -> SelectReport:
    """A `layerpick select` report.json, with the keys an export needs."""
    try:
        report = read_select_report(path)
    except ReportFormatError as error:
        raise ExportError(str(error)) from None
    missing = [key for key in EXPORT_KEYS if getattr(report, key) is None]
    if missing:
        raise ExportError(f"{path} is not a layerpick select report: missing {', '.join(missing)}")
    return report


def _check_report_model(data: SelectReport, model: str, report: Path) -> None:
    if not _same_model(str(data.model), model):
        raise ExportError(f"report {report} is for model {data.model!r}, not {model!r}")


def _same_model(a: str, b: str) -> bool:
    if a == b:
        return True
    pa, pb = Path(a).expanduser(), Path(b).expanduser()
    return pa.exists() and pb.exists() and pa.resolve() == pb.resolve()


def _check_plan_against_model(plan: ExportPlan, loaded: LoadedModel) -> None:
    if plan.report is not None and plan.report.num_layers != loaded.num_layers:
        raise ExportError(
            f"report {plan.report_path} is for a model with {plan.report.num_layers} layers; "
            f"{loaded.name} has {loaded.num_layers}"
        )
    surgery.check_layer(plan.layer, loaded.num_layers, allow_zero=False)
    if plan.representation == "raw" and loaded.family.has_final_norm:
        raise ExportError(
            f"representation 'raw' cannot be exported for {loaded.family.name} models: a model cut "
            "after K blocks applies its final norm, so no cut model outputs the raw residual stream"
        )


def _check_texts(texts: Sequence[str] | None) -> tuple[str, ...]:
    texts = DEFAULT_PARITY_TEXTS if texts is None else tuple(texts)
    if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        raise ExportError("parity texts must be a non-empty list of non-empty strings")
    return texts


def _reference(
    loaded: LoadedModel,
    plan: ExportPlan,
    pooling: str,
    max_length: int,
    texts: Sequence[str],
    progress: bool,
) -> torch.Tensor:
    """Layer K of the full (uncut) model, as `collect` pools it, before any transform and normalisation: what
    the export must reproduce (once transformed as fitted)."""
    states = collect(loaded, loaded.pipeline.prepare(texts), _parity_config(plan, pooling, max_length, progress))
    return states.layer(plan.layer).float()


def _parity_config(plan: ExportPlan, pooling: str, max_length: int, progress: bool) -> CollectConfig:
    return CollectConfig(
        pooling=pooling,
        representation=plan.representation,
        batch_size=PARITY_BATCH_SIZE,
        max_length=max_length,
        progress=progress,
        prompt=plan.prompt,
    )


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


def check_parity(
    directory: Path,
    texts: Sequence[str],
    reference: torch.Tensor,
    dtype: str = "float32",
    *,
    device: str = "cpu",
    scale: float = 0.0,
) -> tuple[float, float]:
    """Load `directory` with sentence-transformers and compare its embeddings with `reference`;
    return (max abs diff, tolerance) or raise ParityError. The tolerance is relative to the largest of 1, the
    largest |value| of `reference` and `scale` (the magnitude a Dense module's sums reach: `working_scale`)."""
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(str(directory), device=device)
    encoded = encoder.encode(list(texts), convert_to_tensor=True, batch_size=PARITY_BATCH_SIZE, show_progress_bar=False)
    reference = reference.float().cpu()
    if encoded.shape != reference.shape:
        raise ParityError(
            f"parity failed: the export gives shape {tuple(encoded.shape)}, "
            f"layer K of the full model {tuple(reference.shape)}"
        )
    diff = (encoded.float().cpu() - reference).abs().max().item()
    tolerance = PARITY_TOLERANCE.get(dtype, 1e-5) * max(1.0, reference.abs().max().item(), scale)
    logger.info("parity: max abs diff %.3g (tolerance %.3g) over %d texts", diff, tolerance, len(texts))
    if not diff <= tolerance:
        raise ParityError(
            f"parity failed: the export differs from layer K of the full model by up to {diff:.3g} "
            f"(tolerance {tolerance:.3g}); nothing was written"
        )
    return diff, tolerance


def inherited_heal(source: str | None, layer: int, num_layers: int) -> dict[str, Any] | None:
    """The heal section of a healed export exported again whole (to ONNX, int8, another dtype): the weights are
    the healed ones, so the section still describes them. Cut further, it is a new cut and the section goes."""
    from layerpick.exporting.metadata import ExportMetadata

    path = Path(source) / model_card.METADATA_FILE if source else None
    if layer != num_layers or path is None or not path.is_file():
        return None
    try:
        return ExportMetadata.read(path).heal
    except LayerpickError:
        return None


def _carried(loaded: LoadedModel) -> dict[str, Any] | None:
    """The source's sentence-transformers steps the export keeps (None for a plain transformers source)."""
    return loaded.pipeline.describe() if loaded.pipeline.sentence_transformers else None


def _write_documents(target: Path, facts: model_card.ExportFacts) -> None:
    (target / model_card.METADATA_FILE).write_text(model_card.metadata_json(facts), encoding="utf-8")
    (target / model_card.CARD_FILE).write_text(model_card.render_model_card(facts), encoding="utf-8")


def _weights_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.glob("*.safetensors"))


def _parameter_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
