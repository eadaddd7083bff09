"""The validation run: tasks x layers through `mteb.evaluate`, resumable, with validation.json and validation.png.

Every (task, layer) pair is one `mteb.evaluate` call on a fresh task with the per-layer encoder view; its
TaskResult is written by mteb's own ResultCache under `<output>/results/layerpick__<model>__layer-<k>/...`
(or under `$MTEB_CACHE/results/...` when MTEB_CACHE is set, beside the user's other MTEB results: the
per-layer model names keep them apart from the full model's).
A pair whose complete result is already there (same dataset revision, no missing split or subset) is read,
not recomputed. A task that fails is recorded with its error and the other tasks still run.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import warnings
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import mteb
import numpy as np
from mteb import ResultCache
from mteb.results import TaskResult

from layerpick._util.atomic import write_text_atomic
from layerpick._util.disk import DiskFullError, is_disk_full
from layerpick._util.locks import output_lock
from layerpick._util.filenames import VALIDATION_FILE
from layerpick._util.outputs import check_output_location, model_output_dir
from layerpick._util.versions import library_versions
from layerpick.core.collect import CollectConfig
from layerpick.core.cost import LayerCosts
from layerpick.core.layer_list import check_layer_syntax, parse_layer_list
from layerpick.core.models import LoadOptions
from layerpick.core.calibration import check_field
from layerpick.core.fit_texts import expand_auto, fit_field, prepare_fit, report_fit_source
from layerpick.core.transform import IDENTITY, TransformSpec, parse_transforms, transform_from_json
from layerpick.core.prompts import (
    DEFAULT_PROMPT,
    Prompt,
    parse_prompts,
    prompt_from_json,
)
from layerpick.errors import LayerpickError
from layerpick.frontier.choice import ChoiceOptions
from layerpick.selection.result import SelectReport, read_select_report
from layerpick.frontier import scores as layer_scores
from layerpick.validation.bars import ValidationBars
from layerpick.validation.config import ValidateConfig
from layerpick.validation.documents import describe as describe_documents
from layerpick.validation.documents import document_folder, with_documents
from layerpick.validation.picks import frontier_section, pair_frontier_section
from layerpick.validation.plot import plot_frontier_png, plot_validation
from layerpick.validation.sources import (
    Setup,
    SourceOptions,
    check_static_exports,
    exported_setup,
    model_setups,
    static_setups,
    store_root,
)
from layerpick.validation.result import ValidationReport, ValidationRun
from layerpick.validation.tasks import TaskSpec, resolve_tasks
from layerpick.validation.transformed import transformed_setups

logger = logging.getLogger(__name__)

RESULTS_DIR = "results"


@dataclass
class TaskOutcome:
    spec: TaskSpec
    scores: dict[int, float] = field(default_factory=dict)
    failure: str | None = None
    ran: int = 0
    reused: int = 0
    seconds: float = 0.0


def run_validation(
    model: str | None,
    tasks: Sequence[str],
    config: ValidateConfig = ValidateConfig(),
    *,
    load_options: LoadOptions = LoadOptions(),
) -> ValidationRun:
    """Evaluate `model` layer by layer (or the export in `config.exported_dir`) on MTEB tasks; see the module
    docstring and `ValidateConfig`."""
    started = time.perf_counter()
    if model is None and config.exported_dir is None:
        raise LayerpickError("give a model, or an exported directory with --exported")
    output = validation_output(model, config)
    results = Path(config.result_cache) if config.result_cache else results_root(output)
    _check_before_loading(
        load_options, config, {"--output": output, "--store": store_root(config.store_dir), "MTEB_CACHE": results}
    )
    fresh = [path for path in (output, store_root(config.store_dir), results) if not path.exists()]
    try:
        with output_lock(output), ExitStack() as stores:
            return _validate(model, tasks, config, load_options, output, results, started, stores)
    except BaseException as error:
        _remove_empty_new(fresh)
        if not is_disk_full(error):
            raise
        for folder in {output, results} & set(fresh):  # a full disk: none of its half-written results is kept
            shutil.rmtree(folder, ignore_errors=True)
        if isinstance(error, DiskFullError):
            raise
        raise DiskFullError(output) from error  # said in a library's words (mteb's result files, a plot)


def _remove_empty_new(folders: list[Path]) -> None:
    """After a failure: the folders this validation created that hold nothing worth keeping (no results, no
    stored representations; a store's key.json alone is not worth keeping) are removed again."""
    for folder in folders:
        if folder.is_dir() and all(item.name == "key.json" for item in folder.rglob("*") if not item.is_dir()):
            shutil.rmtree(folder, ignore_errors=True)


def _validate(
    model: str | None,
    tasks: Sequence[str],
    config: ValidateConfig,
    load_options: LoadOptions,
    output: Path,
    results: Path,
    started: float,
    stores: ExitStack,
) -> ValidationRun:
    """The validation once its output is locked; each representation store is locked once its key is known
    (after loading: the key holds the weights' fingerprint), so two validations of one model never share one."""
    specs = resolve_tasks(tasks, config.task_data)
    select = _read_report(config.report)
    prompts = validation_prompts(config.prompt, select)
    transforms = validation_transforms(
        expand_auto(config.transform, model, load_options, config.fit_texts, config.field), select
    )
    source = config.fit_texts if config.fit_texts is not None else report_fit_source(select)
    fitted = not config.exported_dir and not all(spec.is_identity for spec in transforms)
    check_field(
        config.field, {"--fit-texts": source} if fitted else {}, " (--field reads the fit texts of a --transform)"
    )
    fit_texts = (
        prepare_fit(
            transforms,
            source,
            config.representation,
            model,
            load_options,
            fit_field(config.fit_texts, config.field, select),
        )
        if fitted
        else None
    )
    options = SourceOptions(
        load_options,
        config.pooling,
        config.representation,
        config.batch_size,
        config.max_length,
        config.normalize,
        config.store_dir,
    )
    if config.exported_dir:
        setups = [exported_setup(config.exported_dir, options)]
        if config.layers != "all":
            logger.warning("--layers is ignored with --exported: an export has one layer, its own output")
        if config.prompt is not None:
            logger.warning("--prompt is ignored with --exported: an export wraps texts in its own template")
        if config.transform is not None:
            logger.warning("--transform is ignored with --exported: an export applies its own transform")
    else:
        setups = transformed_setups(model_setups(model, options, prompts), transforms, fit_texts)
    if config.documents_by is not None:
        setups = with_documents(setups, config.documents_by, options, specs)
    statics = static_setups(config.static_exports, options, setups[0].num_layers)
    sources = [one.source for one in setups + statics] + ([setups[0].documents.source] if setups[0].documents else [])
    for directory in sorted({source.store.directory for source in sources}):
        stores.enter_context(output_lock(directory, "--store"))
    setup = setups[0]
    _check_report(select, setup)
    chosen = (
        sorted(setup.slots)
        if config.exported_dir
        else parse_layers(config.layers, setup.num_layers, select.selected_layer if select else None)
    )
    cache = ResultCache(results)
    with ValidationBars(len(specs) * (len(setups) + len(statics)), config.progress) as bars:
        runs = [_run_setup(one, specs, chosen, cache, bars) for one in setups]
        static_runs = [_run_setup(one, specs, sorted(one.slots), cache, bars) for one in statics]
    data = _document(setup, specs, runs[0], chosen, select, started, config.choice)
    if len(setups) > 1:
        data = {**data, **by_prompt_document(setups, runs, chosen)}
        data["pair_frontier"] = pair_frontier_section(data["by_prompt"], _costs(setup.facts), chosen, config.choice)
        data["failures"] = _labelled_failures([(one.variant, outcomes) for one, outcomes in zip(setups, runs)])
    if statics:
        data["static_exports"] = static_document(statics, static_runs, data["mean_over"])
        labelled = [(f"static {_static_name(one)}", outcomes) for one, outcomes in zip(statics, static_runs)]
        data["failures"] = {**data["failures"], **_labelled_failures(labelled)}
    data["documents_by"] = describe_documents(setup)
    data["results_dir"] = RESULTS_DIR if results == output else str(results.resolve() / RESULTS_DIR)
    report = ValidationReport.from_json({"format": ValidationReport.FORMAT, **data}, str(output / VALIDATION_FILE))
    return ValidationRun(report, output, tuple(_write(report, output, select)))


def _check_before_loading(load_options: LoadOptions, config: ValidateConfig, outputs: dict[str, Path]) -> None:
    """Every option and output location, before minutes go into loading and encoding."""
    load_options.check()
    max_length = 1 if config.max_length is None else config.max_length
    CollectConfig(config.pooling, config.representation, config.batch_size, max_length).check()
    if isinstance(config.layers, str):
        check_layer_words(config.layers)
    if config.static_exports and config.exported_dir:
        raise LayerpickError("--static scores tables beside a model's layers; give a model, not --exported")
    if config.documents_by is not None:
        document_folder(config.documents_by, load_options)
    check_static_exports(config.static_exports)
    for option, path in outputs.items():
        check_output_location(path, option)


def validation_prompts(value: str | None, select: SelectReport | None) -> tuple[Prompt, ...]:
    """The templates to evaluate, the one whose results lead the document first: `--prompt` (a template or
    names), else the select report's template, else the default. The report's template leads when listed."""
    if value is None:
        return (prompt_from_json(select.prompt),) if select is not None else parse_prompts(DEFAULT_PROMPT)
    prompts = parse_prompts(value)
    if select is not None:
        chosen = prompt_from_json(select.prompt)
        prompts = tuple(sorted(prompts, key=lambda p: p.template != chosen.template))
    return prompts


def validation_transforms(value: str | None, select: SelectReport | None) -> tuple[TransformSpec, ...]:
    """`--transform` (names), else the select report's transform, else none; the report's leads when listed."""
    chosen = transform_from_json(select.transform) if select is not None else IDENTITY
    if value is None:
        return (chosen,)
    return tuple(sorted(parse_transforms(value), key=lambda spec: spec != chosen))


def by_prompt_document(setups, runs, layers: list[int]) -> dict[str, Any]:
    """Every (template, transform)'s mean score by layer side by side, and the best (variant, layer) pair."""
    table = {}
    for one, outcomes in zip(setups, runs):
        means = layer_scores.mean_by_layer({o.spec.name: o.scores for o in outcomes}, layers, one.num_layers)
        table[one.variant] = {
            "template": one.facts["prompt"]["template"],
            "pooling": one.facts["pooling"],
            "transform": one.facts.get("transform"),
            "mean_by_layer": means,
            "best_layer": layer_scores.best_layer(means),
            "tasks": {o.spec.name: [o.scores.get(k) for k in range(one.num_layers + 1)] for o in outcomes},
        }
    scored = [
        (entry["mean_by_layer"][entry["best_layer"]], label, entry["best_layer"])
        for label, entry in table.items()
        if entry["best_layer"] is not None
    ]
    best = max(scored) if scored else None
    return {"by_prompt": table, "best_pair": {"prompt": best[1], "layer": best[2], "score": best[0]} if best else None}


def _failures(outcomes: list[TaskOutcome]) -> dict[str, str]:
    return {o.spec.name: o.failure for o in outcomes if o.failure}


def _labelled_failures(labelled: list[tuple[str, list[TaskOutcome]]]) -> dict[str, str]:
    """The failures of several setups' runs, each task name followed by its setup's label in brackets."""
    return {
        f"{name} ({label})": failure for label, outcomes in labelled for name, failure in _failures(outcomes).items()
    }


LAYER_WORDS = ("all", "last", "selected")
LAYER_GRAMMAR = "all, selected, last or comma-separated integers"


def parse_layers(layers: str | Sequence[int], num_layers: int, selected: int | None = None) -> list[int]:
    """'all' -> 0..L; 'selected' -> the select report's layer (`selected`) and the last; 'last' -> L; '3,5' or [3, 5]
    -> those;
    words and numbers mix ('selected,4,8'). Checked against 0..L."""
    text = layers if isinstance(layers, str) else ",".join(map(str, layers))
    words = {
        "all": lambda: range(num_layers + 1),
        "last": lambda: [num_layers],
        "selected": lambda: _selected(selected, num_layers),
    }
    return parse_layer_list(text, first=0, last=num_layers, words=words, grammar=LAYER_GRAMMAR)


def check_layer_words(layers: str) -> None:
    """The syntax of --layers, checked before any model is loaded (the range needs the model)."""
    check_layer_syntax(layers, LAYER_WORDS, LAYER_GRAMMAR)


def _selected(selected: int | None, num_layers: int) -> list[int]:
    if selected is None:
        raise LayerpickError("--layers selected needs --report (a select report.json)")
    return [selected, num_layers]


def results_root(output: Path) -> Path:
    """Where mteb's ResultCache keeps the per-layer result files: $MTEB_CACHE when set, else the output."""
    return Path(os.environ["MTEB_CACHE"]).expanduser() if os.environ.get("MTEB_CACHE") else output


def validation_output(model: str | None, config: ValidateConfig) -> Path:
    """Where a validation writes: `config.output_dir`, else the model's (or the export's) default folder."""
    return Path(config.output_dir) if config.output_dir else default_output(model or str(config.exported_dir))


def default_output(model: str) -> Path:
    return model_output_dir(model) / "validation"


def _run_setup(
    setup: Setup, specs: list[TaskSpec], layers: list[int], cache: ResultCache, bars: ValidationBars
) -> list[TaskOutcome]:
    setup.source.progress = bars.encoding
    return [_run_task(spec, layers, setup, cache, bars) for spec in specs]


def static_document(setups: list[Setup], runs: list[list[TaskOutcome]], mean_over: list[str]) -> list[dict]:
    """validation.json's `static_exports`: each `--static` table's main score per task and its mean over the
    tasks the layers' mean is over (None where one of those failed), at the layer it was distilled from."""
    entries = []
    for setup, outcomes in zip(setups, runs):
        layer = next(iter(setup.slots))
        scores = {o.spec.name: o.scores.get(layer) for o in outcomes}
        over = [scores.get(name) for name in mean_over]
        entries.append(
            {
                "name": _static_name(setup),
                "path": setup.facts["exported_dir"],
                "layer": layer,
                "pca_dims": (setup.facts.get("static") or {}).get("pca_dims"),
                "main_score": scores,
                "mean": float(np.mean(over)) if over and None not in over else None,
            }
        )
    return layer_scores.clean(entries)


def _static_name(setup: Setup) -> str:
    return Path(setup.facts["exported_dir"]).name


def _run_task(spec: TaskSpec, layers: list[int], setup: Setup, cache: ResultCache, bars: ValidationBars) -> TaskOutcome:
    outcome = TaskOutcome(spec)
    bars.start_task(spec.name, len(layers))
    began = time.perf_counter()
    for layer in layers:
        try:
            _run_pair(outcome, layer, setup, cache)
        except Exception as error:  # noqa: BLE001 - one task's failure must not stop the others
            if is_disk_full(error):
                raise  # no task can be scored or stored: the command stops, naming the full disk
            outcome.failure = _one_line(error)
            logger.warning("task %s failed at layer %d: %s", spec.name, layer, outcome.failure)
            logger.debug("traceback", exc_info=True)
            break
        bars.layer_done()
    outcome.seconds = time.perf_counter() - began
    bars.task_done()
    return outcome


def _run_pair(outcome: TaskOutcome, layer: int, setup: Setup, cache: ResultCache) -> None:
    task = labels_as_arrays(outcome.spec.new_task())
    meta = setup.meta(layer)
    result = _finished(cache, task, meta)
    if result is not None:
        outcome.reused += 1
    else:
        result = _evaluate(setup, layer, task, cache)
        outcome.ran += 1
    outcome.scores[layer] = main_score(result)


def _evaluate(setup: Setup, layer: int, task, cache: ResultCache) -> TaskResult:
    with _quiet_datasets(), single_threaded_blas(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = mteb.evaluate(
            setup.encoder(layer),
            task,
            cache=cache,
            overwrite_strategy="always",
            show_progress_bar=False,
            encode_kwargs={"batch_size": setup.batch_size, "show_progress_bar": False},
            co2_tracker=False,
        )
    if result.exceptions:
        raise LayerpickError(result.exceptions[0].exception)
    return result.task_results[0]


def labels_as_arrays(task):
    """mteb's classification scoring hands the test labels to each of sklearn's metrics as a lazy `datasets`
    column, which every metric converts row by row through Arrow: 35 of 54 s of one AmazonCounterfactual
    evaluation (600 test rows, 10 experiments, 2 splits) on this 2-core machine. Converted once per experiment
    instead, the scores are the same numbers. Only this task instance is changed; other tasks are untouched."""
    from mteb.abstasks.classification import AbsTaskClassification

    if isinstance(task, AbsTaskClassification):
        original = task._calculate_scores
        task._calculate_scores = lambda y_test, y_pred: original(np.asarray(y_test), y_pred)
    return task


def single_threaded_blas():
    """MTEB's scoring fits many small models (10 logistic regressions per classification task and layer); on
    small matrices threaded BLAS costs more than it gains (25x slower measured on a busy 2-core machine).
    Torch's own threads, which encode, are untouched."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


@contextmanager
def _quiet_datasets() -> Iterator[None]:
    """mteb maps datasets with per-call progress bars; layerpick draws its own."""
    import datasets

    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def _finished(cache: ResultCache, task, meta) -> TaskResult | None:
    """The stored result of this (task, layer), if complete and made from the same data; else None."""
    path = cache.get_task_result_path(task.metadata.name, meta)
    if not path.exists():
        return None
    try:
        result = TaskResult.from_disk(path)
    except Exception as error:  # noqa: BLE001 - an interrupted write: evaluate again
        logger.warning("unreadable result %s (%s); evaluating again", path, _one_line(error))
        path.unlink(missing_ok=True)
        return None
    if result.dataset_revision != task.metadata.revision or result.get_missing_evaluations(task):
        return None
    return result


def main_score(result: TaskResult) -> float:
    """The test split's main score (mean over subsets); without a test split, the mean over all splits.
    Rounded to 6 decimals as mteb's result files are, so fresh and resumed runs report the same numbers."""
    splits = ["test"] if "test" in result.scores else list(result.scores)
    return round(float(result.get_score(splits=splits)), 6)


def _read_report(path: Path | None) -> SelectReport | None:
    """The select report whose metric curves validation correlates with the task scores (checked for shape)."""
    if path is None:
        return None
    report = read_select_report(path)
    report.check_scores(str(path))
    return report


def _check_report(select: SelectReport | None, setup: Setup) -> None:
    if select is not None and select.num_layers != setup.num_layers:
        raise LayerpickError(
            f"the report is for a model with {select.num_layers} layers; this one has {setup.num_layers}"
        )


def _document(
    setup: Setup,
    specs: list[TaskSpec],
    outcomes: list[TaskOutcome],
    layers: list[int],
    select: SelectReport | None,
    started: float,
    choice: ChoiceOptions,
) -> dict[str, Any]:
    L = setup.num_layers
    scores = {o.spec.name: o.scores for o in outcomes}
    means = layer_scores.mean_by_layer(scores, layers, L)
    best = layer_scores.best_layer(means)
    selected = select.selected_layer if select else None
    evaluate_s = sum(o.seconds for o in outcomes) - setup.source.collect_seconds
    facts = dict(setup.facts)
    load_s = facts.pop("load_s", None)
    data = {
        **facts,
        "layers_evaluated": layers,
        "tasks": {
            o.spec.name: {
                **o.spec.describe(),
                "main_score_by_layer": [o.scores.get(k) for k in range(L + 1)],
                "evaluations_run": o.ran,
                "evaluations_reused": o.reused,
            }
            for o in outcomes
        },
        "mean_by_layer": means,
        "mean_over": [o.spec.name for o in outcomes if all(k in o.scores for k in layers)],
        "selected_layer": selected,
        "last_layer": L,
        "best_layer": best,
        "comparison": layer_scores.comparison(means, selected, L, best),
        "frontier": frontier_section(means, _costs(facts), layers, selected, choice),
        "metric_correlations": layer_scores.metric_correlations(select.scores, select.directions, means)
        if select
        else None,
        "select_report": {"model": select.model, "rule": select.rule} if select else None,
        "texts_encoded": setup.source.encoded,
        "timings": {
            "load_s": load_s,
            "collect_s": setup.source.collect_seconds,
            "evaluate_s": evaluate_s,
            "total_s": time.perf_counter() - started,
        },
        "versions": library_versions(),
        "failures": _failures(outcomes),
    }
    return layer_scores.clean(data)


def _costs(facts: dict[str, Any]) -> LayerCosts | None:
    return LayerCosts.from_json(facts["cost"]) if facts.get("cost") else None


def _write(report: ValidationReport, output: Path, select: SelectReport | None) -> list[Path]:
    """The plots, then validation.json last (what readers look for first: its presence means the rest is there)."""
    output.mkdir(parents=True, exist_ok=True)
    path = output / VALIDATION_FILE
    data = report.to_json()
    plots = [plot_validation(data, output / "validation.png", select)]
    if data.get("frontier"):
        plots.append(plot_frontier_png(data, output / "frontier.png"))
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")
    return [path, *plots]


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__
