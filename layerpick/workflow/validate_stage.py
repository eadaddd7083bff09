"""run's validation stages: the model's layers scored on the run's tasks (DIR/validate, `layerpick validate` with
the select report), the healed export scored whole (DIR/validate-export), the layer or (template, transform) pair
chosen from a validation (`--choose validated`, `--max-loss`), and what the model card shows of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from layerpick._util.filenames import REPORT_FILE
from layerpick.core.models import LoadOptions
from layerpick.frontier.choice import ChoiceError
from layerpick.selection.config import SelectConfig
from layerpick.selection.result import SelectReport, read_select_report
from layerpick.validation.result import ValidationReport
from layerpick.workflow.config import RunConfig

HEALED_VALIDATION = "validate-export"


def validation_summary(validation: ValidationReport | None) -> dict[str, Any] | None:
    """What the model card shows of a validation: each task's main score by layer, and the mean."""
    if validation is None:
        return None
    tasks = {name: {"main_score_by_layer": task["main_score_by_layer"]} for name, task in validation.tasks.items()}
    return {"tasks": tasks, "mean_by_layer": validation.mean_by_layer}


def validate_layers(
    model: str, load_options: LoadOptions, config: RunConfig, output: Path, progress: bool
) -> ValidationReport:
    from layerpick.validation import (  # mteb is heavy: only when validating
        ValidateConfig,
        run_validation,
    )

    target = output / "validate"
    settings = ValidateConfig(
        layers=config.layers,
        report=output / "select" / REPORT_FILE,
        output_dir=target,
        pooling=config.select.collect.pooling,
        representation=config.select.collect.representation,
        normalize=config.normalize,
        **_where_and_how(config, target, progress),
        choice=config.choice,
        prompt=config.select.prompt,  # None: the report's template; several: every template side by side
        transform=config.select.transform,
        **fit_settings(config.select, report_fits(read_select_report(output / "select" / REPORT_FILE))),
        static_exports=config.static_exports,
    )  # None: the report's transform
    return run_validation(model, list(config.tasks), settings, load_options=load_options).report


def validate_export(
    model: str, load_options: LoadOptions, config: RunConfig, output: Path, progress: bool
) -> ValidationReport:
    """The healed export scored on the run's tasks as it will be served (the full model's layers are `validate`'s)."""
    from layerpick.validation import ValidateConfig, run_validation

    target = output / HEALED_VALIDATION
    settings = ValidateConfig(
        exported_dir=output / "model", output_dir=target, **_where_and_how(config, target, progress)
    )
    return run_validation(None, list(config.tasks), settings, load_options=load_options).report


def _where_and_how(config: RunConfig, target: Path, progress: bool) -> dict[str, Any]:
    """What both validate stages share: the batch, the length, the task data, the store and result cache."""
    return {
        "batch_size": config.validate_batch_size,
        "max_length": config.validate_max_length,
        "store_dir": target / "store",
        "result_cache": target,
        "task_data": config.task_data,
        "progress": progress,
    }


def exported_layer(config: RunConfig, validation: ValidationReport | None) -> int | None:
    """The layer chosen from the validation (`--choose validated`, `--max-loss`), or None for the rule's pick;
    with several variants validated, the chosen (variant, layer) pair's layer (`exported_variant` its variant)."""
    if not config.choice.validated:
        return None
    pair = exported_variant(config, validation)
    if pair is not None:
        return int(pair["layer"])
    section = (validation.frontier if validation else None) or {}
    if section.get("chosen_layer") is None:
        raise ChoiceError("no layer could be chosen from the validation (no evaluated layer >= 1 has a mean score)")
    return int(section["chosen_layer"])


def exported_variant(config: RunConfig, validation: ValidationReport | None) -> dict[str, Any] | None:
    """The (template, transform) pair the validation chose across variants, with its template and transform;
    None with one variant (or no validated choice)."""
    chosen = ((validation.pair_frontier if validation else None) or {}).get("chosen")
    if not config.choice.validated or not chosen:
        return None
    entry = validation.by_prompt[chosen["variant"]]
    return {
        **chosen,
        "template": entry.get("template"),
        "pooling": entry.get("pooling"),
        "transform": (entry.get("transform") or {}).get("name"),
    }


def fit_settings(select: SelectConfig, fits: bool) -> dict[str, Any]:
    """The fit texts select fitted on (--fit-texts, else the calibration texts), for the validate and export
    stages, with --field where the stage fits a transform (a stage that fits none reads no texts)."""
    source = select.fit_texts if select.fit_texts is not None else select.calibration
    return {"fit_texts": source, "field": select.field if fits else None}


def report_fits(select: SelectReport | None) -> bool:
    """Whether a select report scored a fitted transform (its choice's, or any variant's)."""
    if select is None:
        return False
    entries = [select.transform or {}] + [entry.get("transform") or {} for entry in (select.by_prompt or {}).values()]
    return any(entry.get("fit") for entry in entries)
