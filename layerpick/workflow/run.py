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
import hashlib
import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from layerpick._util.atomic import write_json_atomic
from layerpick._util.locks import output_lock
from layerpick._util.filenames import (
    BENCH_FILE,
    METADATA_FILE,
    REPORT_FILE,
    RUN_FILE,
    VALIDATION_FILE,
)
from layerpick._util.outputs import check_output_location, check_replaceable
from layerpick.benchmark import BenchConfig, BenchResult, run_bench
from layerpick.core.calibration import load_calibration
from layerpick.core.models import LoadOptions
from layerpick.core.prompts import parse_prompts, prompt_from_json
from layerpick.exporting.config import ExportConfig
from layerpick.exporting import annotate_export, export_model
from layerpick.exporting.metadata import ExportMetadata
from layerpick.frontier.choice import ChoiceError
from layerpick.core.fingerprint import model_fingerprint
from layerpick.core.fit_texts import expand_auto
from layerpick.core.transform import DEFAULT_TRANSFORM, parse_transforms
from layerpick.errors import LayerpickError
from layerpick.selection.config import SelectConfig
from layerpick.selection import check_min_speedup, run_select, select_fit_texts
from layerpick.selection.report import write_report
from layerpick.selection.result import SelectReport, read_select_report
from layerpick.validation.result import ValidationReport
from layerpick.workflow import heal_stage
from layerpick.workflow.config import RunConfig
from layerpick.workflow.record import RunRecord

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

    @property
    def export_dir(self) -> Path:
        return self.output / "model"


Announce = Callable[[str, bool], None]


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
    result.select = _stage(
        ledger,
        "select",
        keys,
        output / "select" / REPORT_FILE,
        announce,
        lambda: _select(model, load_options, config, output, progress),
        read=read_select_report,
    )
    if config.tasks:
        result.validation = _stage(
            ledger,
            "validate",
            keys,
            output / "validate" / VALIDATION_FILE,
            announce,
            lambda: _validate(model, load_options, config, output, progress),
            read=ValidationReport.read,
        )
        if result.validation.failures:
            ledger.forget("validate")  # the next run retries the failed tasks (finished pairs are kept)
    layer = exported_layer(config, result.validation)
    result.export = _stage(
        ledger,
        "export",
        keys,
        result.export_dir / METADATA_FILE,
        announce,
        (lambda: heal_stage.heal_export(model, load_options, config, output, progress))
        if config.heal is not None
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
    if config.bench is not None:
        result.bench = _stage(
            ledger,
            "bench",
            keys,
            output / BENCH_FILE,
            announce,
            lambda: _bench(config.bench, output, progress),
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


def stage_keys(model: str, load_options: LoadOptions, config: RunConfig, inputs: dict[str, Any]) -> dict[str, str]:
    """Each stage's key covers its own inputs and the keys of the stages it builds on. `inputs` (from
    `input_facts`) adds what names alone do not tell: the calibration texts' hash, each task's data revision."""
    base = {
        "model": inputs["model"],
        "model_content": inputs["model_content"],
        "load": dataclasses.asdict(load_options),
    }
    select = _digest(
        {
            **base,
            "select": _without_progress(config.select),
            "calibration": inputs["calibration"],
            **({"fit_texts": inputs["fit_texts"]} if inputs.get("fit_texts") else {}),
        }
    )
    validate = _digest(
        {
            "select": select,
            "tasks": inputs["tasks"],
            "layers": config.layers,
            "batch": config.validate_batch_size,
            "max_length": config.validate_max_length,
            "normalize": config.normalize,
            "choice": dataclasses.asdict(config.choice),
            **({"static_exports": inputs["static_exports"]} if inputs.get("static_exports") else {}),
        }
    )
    export = _digest(
        {
            "select": select,
            "normalize": config.normalize,
            "choice": {"validate": validate, **dataclasses.asdict(config.choice)} if config.choice.validated else None,
            **({"heal": heal_stage.heal_key(config)} if config.heal is not None else {}),
        }
    )
    bench = _digest({"export": export, "bench": dataclasses.asdict(config.bench) if config.bench else None})
    return {"select": select, "validate": validate, "export": export, "bench": bench}


def validation_summary(validation: ValidationReport | None) -> dict[str, Any] | None:
    """What the model card shows of a validation: each task's main score by layer, and the mean."""
    if validation is None:
        return None
    tasks = {name: {"main_score_by_layer": task["main_score_by_layer"]} for name, task in validation.tasks.items()}
    return {"tasks": tasks, "mean_by_layer": validation.mean_by_layer}


class Ledger:
    """run.json: the key and timing of every finished stage, rewritten after each stage."""

    def __init__(self, path: Path, force: bool) -> None:
        self.path = path
        self.previous = {} if force or not path.is_file() else dict(RunRecord.read(path).stages)
        self.stages: dict[str, dict[str, Any]] = {}

    def start(self) -> None:
        """Mark the folder as a layerpick run before any stage writes into it (earlier stages kept)."""
        self._save()

    def reusable(self, stage: str, key: str, product: Path) -> bool:
        return self.previous.get(stage, {}).get("key") == key and product.is_file()

    def record(self, stage: str, key: str, seconds: float, reused: bool) -> None:
        earlier = self.previous.get(stage, {}).get("seconds") if reused else None
        self.stages[stage] = {
            "key": key,
            "seconds": round(earlier if earlier is not None else seconds, 3),
            "reused": reused,
        }
        self._save()

    def forget(self, stage: str) -> None:
        self.previous.pop(stage, None)
        self.stages[stage]["key"] = None
        self._save()

    def _save(self) -> None:
        write_json_atomic(self.path, RunRecord({**self.previous, **self.stages}).to_json())


def _stage(
    ledger: Ledger,
    stage: str,
    keys: dict[str, str],
    product: Path,
    announce: Announce,
    compute: Callable[[], Any],
    read: Callable[[Path], Any],
) -> Any:
    """Reuse a finished stage's product, or compute it; later stages are invalidated by key, not by time."""
    key = keys[stage]
    reused = ledger.reusable(stage, key, product)
    announce(stage, reused)
    started = time.perf_counter()
    data = read(product) if reused else compute()
    ledger.record(stage, key, time.perf_counter() - started, reused)
    return data


def _select(model: str, load_options: LoadOptions, config: RunConfig, output: Path, progress: bool) -> SelectReport:
    select = dataclasses.replace(config.select, collect=dataclasses.replace(config.select.collect, progress=progress))
    report = run_select(model, load_options, select)
    write_report(report, output / "select")
    return report


def _validate(
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
        batch_size=config.validate_batch_size,
        max_length=config.validate_max_length,
        normalize=config.normalize,
        store_dir=target / "store",
        result_cache=target,
        task_data=config.task_data,
        progress=progress,
        choice=config.choice,
        prompt=config.select.prompt,  # None: the report's template; several: every template side by side
        transform=config.select.transform,
        **_fit_settings(config.select, _report_fits(read_select_report(output / "select" / REPORT_FILE))),
        static_exports=config.static_exports,
    )  # None: the report's transform
    return run_validation(model, list(config.tasks), settings, load_options=load_options).report


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
            **_fit_settings(config.select, bool((select.transform or {}).get("fit"))),
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
            prompt=prompt,
            transform=transform,
            **_fit_settings(config.select, transform not in (None, "none")),
        )
    export_model(model, layer, output / "model", settings, load_options=load_options)
    return ExportMetadata.read(output / "model" / METADATA_FILE)


def _fit_settings(select: SelectConfig, fits: bool) -> dict[str, Any]:
    """The fit texts select fitted on (--fit-texts, else the calibration texts), for the validate and export
    stages, with --field where the stage fits a transform (a stage that fits none reads no texts)."""
    source = select.fit_texts if select.fit_texts is not None else select.calibration
    return {"fit_texts": source, "field": select.field if fits else None}


def _report_fits(select: SelectReport | None) -> bool:
    """Whether a select report scored a fitted transform (its choice's, or any variant's)."""
    if select is None:
        return False
    entries = [select.transform or {}] + [entry.get("transform") or {} for entry in (select.by_prompt or {}).values()]
    return any(entry.get("fit") for entry in entries)


def _bench(bench: BenchConfig, output: Path, progress: bool) -> BenchResult:
    """The baseline is the full model the export was cut from, as its layerpick.json records it."""
    result = run_bench(output / "model", bench, progress=progress)
    write_json_atomic(output / BENCH_FILE, result.to_json())
    return result


def input_facts(model: str, config: RunConfig) -> dict[str, Any]:
    """Check the rule, layers, bench settings and tasks before the first stage spends minutes on the model,
    and return what the stage keys need beyond names: the model's resolved path, the calibration texts'
    hash and each task's data revision (a content hash for a local folder)."""
    config.select.check()
    check_min_speedup(config.select.min_speedup)
    heal_stage.check_heal(model, config)
    if config.choice.validated and not config.tasks:
        raise ChoiceError("--choose validated and --max-loss choose from validated scores: give --tasks")
    if config.static_exports and not config.tasks:
        raise LayerpickError("--static is scored beside the layers on the validation's tasks: give --tasks")
    if config.select.prompt is not None:
        parse_prompts(config.select.prompt)
    select = config.select
    texts = load_calibration(select.calibration, field=select.field, limit=select.limit, seed=select.scoring.seed)
    source = select.fit_texts if select.fit_texts is not None else select.calibration
    fit = select_fit_texts(
        parse_transforms(
            expand_auto(select.transform or DEFAULT_TRANSFORM, model, LoadOptions(), source, select.field)
        ),
        select,
    )
    if config.bench is not None:
        config.bench.validate(prefix="--bench-")  # run's options: --bench-texts, --bench-repeats
    facts = {
        "model": str(Path(model).resolve()) if Path(model).exists() else model,
        "model_content": model_fingerprint(model),  # weights, config or tokenizer changed in place: a new key
        "calibration": texts.describe()["sha256"],
        "tasks": [],
    }
    if fit is not None:  # the fit texts' content, not only their file name
        facts["fit_texts"] = fit.describe()["sha256"]
    if config.tasks:
        from layerpick.validation import (  # mteb only when validating
            check_layer_words,
            resolve_tasks,
        )

        check_layer_words(config.layers)
        facts["tasks"] = [
            {"name": spec.name, **spec.describe()} for spec in resolve_tasks(list(config.tasks), config.task_data)
        ]
    if config.static_exports:
        facts["static_exports"] = _static_facts(config.static_exports)
    return facts


def _static_facts(paths: tuple[Path, ...]) -> list[dict[str, str]]:
    """Each `--static` export as the validate key sees it: its folder and its layerpick.json's hash (a table
    exported again into the same folder is scored again). A folder that is no static export is refused here."""
    from layerpick.validation import check_static_exports

    check_static_exports(paths)
    return [
        {
            "path": str(Path(path).resolve()),
            "sha256": hashlib.sha256((Path(path) / METADATA_FILE).read_bytes()).hexdigest(),
        }
        for path in paths
    ]


def _check_output(output: Path) -> None:
    check_replaceable(output, overwrite=True, owned=lambda path: (path / LEDGER).is_file(), what="run")  # resumed
    output.mkdir(parents=True, exist_ok=True)


def _clear(output: Path) -> None:
    """--force: remove what earlier runs wrote (only the names this module owns)."""
    for name in ("select", "validate", "model", heal_stage.SWEEP_FOLDER):
        shutil.rmtree(output / name, ignore_errors=True)
    for name in (BENCH_FILE, "report.md", "report.html"):
        (output / name).unlink(missing_ok=True)


def _without_progress(select: SelectConfig) -> dict[str, Any]:
    data = dataclasses.asdict(select)
    data["collect"].pop("progress", None)
    return data


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]
