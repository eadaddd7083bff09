"""What an export is asked to do, checked before any model loads: the request and its plan.

Owns: the plan (a manual K, or the layer, pooling, representation, prompt and transform of a `layerpick select`
report for the same model, each option checked against the report); the `ExportRequest` that `job.cut_and_save`
carries out, made by every check that needs no weights (the fit texts of a transform, the ONNX and static
requests, the parity texts); the refusal of an output that would replace its own source; and, once the model is
loaded, the plan checked against it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerpick.core import surgery
from layerpick.core.calibration import check_field
from layerpick.core.collect_config import REPRESENTATIONS
from layerpick.core.fit_texts import AUTO, expand_auto, fit_field
from layerpick.core.models import LoadedModel, LoadOptions
from layerpick.core.pooling import check_pooling
from layerpick.core.prompts import PLAIN, Prompt, parse_prompt, prompt_from_json
from layerpick.core.transform import IDENTITY, TransformSpec, parse_transforms, transform_from_json
from layerpick.errors import LayerRangeError, ReportFormatError
from layerpick.exporting import static_checks, transformed
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.errors import ExportError
from layerpick.exporting.onnx import step as onnx_step
from layerpick.exporting.parity import check_texts
from layerpick.selection.result import SelectReport, read_select_report

# Beyond the keys every select report has, an export needs to know how the layer was pooled.
EXPORT_KEYS = ("pooling",)


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
class ExportRequest:
    """An export checked before any model loads: what `cut_and_save` needs besides the output."""

    model: str
    config: ExportConfig
    load_options: LoadOptions
    plan: ExportPlan
    fit_texts: Any
    with_onnx: bool
    texts: tuple[str, ...]
    static_request: static_checks.StaticRequest | None = None


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
    plan = static_checks.table_plan(config, plan)
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
    static_request = static_checks.check_request(config, plan, load_options, model)
    texts = check_texts(config.parity_texts)
    load_options.check()
    if config.max_seq_length is not None and config.max_seq_length < 1:
        raise ExportError(f"--max-seq-length must be at least 1 (got {config.max_seq_length})")
    return ExportRequest(model, config, load_options, plan, fit_texts, with_onnx, texts, static_request)


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


def check_plan_against_model(plan: ExportPlan, loaded: LoadedModel) -> None:
    """The plan against the loaded model: the report's layer count, the layer's range, a representation it has."""
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
