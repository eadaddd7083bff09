"""The end-to-end job behind `layerpick run`: select, validate, export, bench, then one report.

Owns the layout of the output folder and the rule for reusing a finished stage:

    DIR/select/     report.json, report.md, metrics.png              (layerpick select)
    DIR/validate/   validation.json, validation.png, results/, store/  (layerpick validate, when tasks are given)
    DIR/model/      the exported sentence-transformers model          (layerpick export; layerpick heal with
                    --heal-layers, its heals kept in DIR/.model.heal-sweep until one is in place)
    DIR/bench.json  the exported model against the full one           (layerpick bench)
    DIR/run.json    each stage's key (a hash of everything it depends on) and timing
    DIR/report.md, DIR/report.html                                    (layerpick.workflow.report)

A stage is reused when run.json records the same key for it and its output is there; a changed option
recomputes that stage and every later one; `force` recomputes everything (and empties the store). The folder
is locked (`layerpick._util.locks`) from the checks until the report is written, so two runs never mix their
stages in one folder and a ledger always describes the products beside it.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layerpick._util.atomic import write_json_atomic
from layerpick._util.filenames import BENCH_FILE, METADATA_FILE, REPORT_FILE, RUN_FILE, VALIDATION_FILE
from layerpick._util.locks import output_lock
from layerpick._util.outputs import check_output_location, check_replaceable
from layerpick.benchmark import BenchConfig, BenchResult, run_bench
from layerpick.core.models import LoadOptions
from layerpick.core.prompts import prompt_from_json
from layerpick.exporting import annotate_export, export_model
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.metadata import ExportMetadata
from layerpick.healing.config import HealConfig
from layerpick.healing import HealPlan
from layerpick.selection import run_select
from layerpick.selection.report import write_report
from layerpick.selection.result import SelectReport, read_select_report
from layerpick.validation.result import ValidationReport
from layerpick.workflow import heal_stage
from layerpick.workflow.config import RunConfig
from layerpick.workflow.keys import input_facts, stage_keys
from layerpick.workflow.ledger import Announce, Ledger, stage
from layerpick.workflow.validate_stage import (
    HEALED_VALIDATION,
    exported_layer,
    exported_variant,
    fit_settings,
    validate_export,
    validate_layers,
    validation_summary,
)

logger = logging.getLogger(__name__)

LEDGER = RUN_FILE


@dataclass
class RunResult:
    """Every stage's outcome: the documents each wrote, and which stages were reused."""

    model: str
    output: Path
    load_options: LoadOptions
    config: RunConfig
    select: SelectReport
    validation: ValidationReport | None
    export: ExportMetadata | None
    bench: BenchResult | None
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    report_files: list[Path] = field(default_factory=list)
    heal: HealConfig | None = None  # the heal the export stage ran (`heal_stage.resolve`), None for a plain cut
    healed_validation: ValidationReport | None = None  # the healed export scored on the tasks (DIR/validate-export)
    heal_plan: HealPlan | None = None  # what the heal was planned to cost (DIR/heal-plan.json)

    @property
    def export_dir(self) -> Path:
        return self.output / "model"


def run_workflow(
    model: str,
    output: Path,
    load_options: LoadOptions = LoadOptions(),
    config: RunConfig = RunConfig(),
    *,
    progress: bool = True,
    announce: Announce | None = None,
) -> RunResult:
    """Select a layer of `model`, validate it (when tasks are given), export it, bench it, into `output`, and
    write the run's report (report.md, report.html) last."""
    output = Path(output)
    load_options.check()
    inputs = input_facts(model, config)
    check_output_location(output, "--output")
    with output_lock(output):
        return _locked_run(model, output, load_options, config, inputs, progress, announce)


def _locked_run(
    model: str,
    output: Path,
    load_options: LoadOptions,
    config: RunConfig,
    inputs: dict[str, Any],
    progress: bool,
    announce: Announce | None,
) -> RunResult:
    from layerpick.workflow.report import write_run_report  # the report module builds on this one

    created = [folder for folder in (output, *output.parents) if not folder.exists()]  # innermost first
    _check_output(output)
    ledger = Ledger(output / LEDGER, config.force)
    ledger.start()  # run.json first: a run interrupted at any later point is recognised and resumed
    try:
        result = _run_stages(model, output, load_options, config, inputs, ledger, progress, announce)
        result.report_files = write_run_report(result)
        return result
    except BaseException:
        if created and not ledger.stages:  # nothing finished: leave no folder behind (a re-run starts afresh)
            shutil.rmtree(output, ignore_errors=True)
            for folder in created[1:]:
                if folder.is_dir() and not any(folder.iterdir()):
                    folder.rmdir()
        raise


def _run_stages(
    model: str,
    output: Path,
    load_options: LoadOptions,
    config: RunConfig,
    inputs: dict[str, Any],
    ledger: "Ledger",
    progress: bool,
    announce: Announce | None,
) -> RunResult:
    if config.force:
        _clear(output)
    announce = announce or (lambda stage, reused: None)
    keys = stage_keys(model, load_options, config, inputs)
    result = RunResult(model, output, load_options, config, select=None, validation=None, export=None, bench=None)
    result.select = stage(
        ledger,
        "select",
        keys,
        output / "select" / REPORT_FILE,
        announce,
        lambda: _select(model, load_options, config, output, progress),
        read=read_select_report,
    )
    if config.tasks:
        result.validation = stage(
            ledger,
            "validate",
            keys,
            output / "validate" / VALIDATION_FILE,
            announce,
            lambda: validate_layers(model, load_options, config, output, progress),
            read=ValidationReport.read,
        )
        if result.validation.failures:
            ledger.forget("validate")  # the next run retries the failed tasks (finished pairs are kept)
    layer = exported_layer(config, result.validation)
    result.heal = heal_stage.resolve(model, config, result.select, load_options)
    result.export = stage(
        ledger,
        "export",
        keys,
        result.export_dir / METADATA_FILE,
        announce,
        (
            lambda: heal_stage.heal_export(
                model, load_options, config, result.heal, result.select, output, keys["export"], progress
            )
        )
        if result.heal is not None
        else lambda: _export(
            model,
            load_options,
            config,
            output,
            progress,
            layer,
            result.select,
            exported_variant(config, result.validation),
        ),
        read=ExportMetadata.read,
    )
    result.heal_plan = heal_stage.read_plan(output) if result.heal is not None else None
    if result.export.is_healed and config.tasks:
        result.healed_validation = stage(
            ledger,
            "validate-export",
            keys,
            output / HEALED_VALIDATION / VALIDATION_FILE,
            announce,
            lambda: validate_export(model, load_options, config, output, progress),
            read=ValidationReport.read,
        )
    if config.bench is not None:
        result.bench = stage(
            ledger,
            "bench",
            keys,
            output / BENCH_FILE,
            announce,
            lambda: _bench(dataclasses.replace(config.bench, backend=config.bench_backend), output, progress),
            read=BenchResult.read,
        )
    annotate_export(
        result.export_dir,
        validation=validation_summary(result.validation),
        speedup=result.bench.speedups() if result.bench else None,
    )
    result.export = ExportMetadata.read(result.export_dir / METADATA_FILE)
    result.stages = ledger.stages
    return result


def _select(model: str, load_options: LoadOptions, config: RunConfig, output: Path, progress: bool) -> SelectReport:
    select = dataclasses.replace(config.select, collect=dataclasses.replace(config.select.collect, progress=progress))
    report = run_select(model, load_options, select)
    write_report(report, output / "select")
    return report


def _export(
    model: str,
    load_options: LoadOptions,
    config: RunConfig,
    output: Path,
    progress: bool,
    layer: int | None,
    select: SelectReport,
    variant: dict[str, Any] | None = None,
) -> ExportMetadata:
    """The rule's pick from the select report, or the validated `layer` with the report's pooling and
    representation (or the chosen variant's template, pooling and transform)."""
    transform = (select.transform or {}).get("name")
    if layer is None:
        settings = ExportConfig(
            normalize=config.normalize,
            report=output / "select" / REPORT_FILE,
            overwrite=True,
            progress=progress,
            format=config.format,
            quantize=config.quantize,
            **fit_settings(config.select, bool((select.transform or {}).get("fit"))),
        )
    else:
        prompt = prompt_from_json(select.prompt)
        pooling = select.pooling
        if variant is not None:
            prompt = prompt_from_json({"template": variant["template"]})
            pooling, transform = variant["pooling"], variant["transform"]
        settings = ExportConfig(
            pooling=pooling,
            representation=select.representation,
            normalize=config.normalize,
            overwrite=True,
            progress=progress,
            format=config.format,
            quantize=config.quantize,
            prompt=prompt,
            transform=transform,
            **fit_settings(config.select, transform not in (None, "none")),
        )
    export_model(model, layer, output / "model", settings, load_options=load_options)
    return ExportMetadata.read(output / "model" / METADATA_FILE)


def _bench(bench: BenchConfig, output: Path, progress: bool) -> BenchResult:
    """The baseline is the full model the export was cut from, as its layerpick.json records it."""
    result = run_bench(output / "model", bench, progress=progress)
    write_json_atomic(output / BENCH_FILE, result.to_json())
    return result


def _check_output(output: Path) -> None:
    check_replaceable(output, overwrite=True, owned=lambda path: (path / LEDGER).is_file(), what="run")  # resumed
    output.mkdir(parents=True, exist_ok=True)


def _clear(output: Path) -> None:
    """--force: remove what earlier runs wrote (only the names this module owns)."""
    for name in ("select", "validate", "model", HEALED_VALIDATION, heal_stage.SWEEP_FOLDER):
        shutil.rmtree(output / name, ignore_errors=True)
    for name in (BENCH_FILE, heal_stage.PLAN_FILE, "report.md", "report.html"):
        (output / name).unlink(missing_ok=True)
