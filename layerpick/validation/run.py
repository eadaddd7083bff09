"""The validation run: tasks x layers through `mteb.evaluate`, resumable, with validation.json and validation.png.

Owns: the order of a validation's steps once its options are checked (`request`): lock the output, resolve the
tasks, build the setups that encode (`sources`, `transformed`, `documents`), lock their representation stores,
evaluate every (task, layer) pair (`evaluate`), assemble validation.json (`summary`, `picks`) and write it after
its plots; and, after a failure, the removal of what the failed run created and holds nothing worth keeping (all
of it on a full disk). A task that fails is recorded with its error and the other tasks still run.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Sequence

from mteb import ResultCache

from layerpick._util.atomic import write_text_atomic
from layerpick._util.disk import DiskFullError, is_disk_full
from layerpick._util.filenames import VALIDATION_FILE
from layerpick._util.locks import output_lock
from layerpick.core.calibration import check_field
from layerpick.core.fit_texts import expand_auto, fit_field, prepare_fit, report_fit_source
from layerpick.core.models import LoadOptions
from layerpick.errors import LayerpickError
from layerpick.selection.result import SelectReport
from layerpick.validation.bars import ValidationBars
from layerpick.validation.config import ValidateConfig
from layerpick.validation.documents import describe as describe_documents
from layerpick.validation.documents import with_documents
from layerpick.validation.evaluate import run_setup
from layerpick.validation.picks import pair_frontier_section
from layerpick.validation.plot import plot_frontier_png, plot_validation
from layerpick.validation.request import (
    check_before_loading,
    check_report,
    parse_layers,
    read_report,
    results_root,
    validation_output,
    validation_prompts,
    validation_transforms,
)
from layerpick.validation.result import ValidationReport, ValidationRun
from layerpick.validation.sources import SourceOptions, exported_setup, model_setups, static_setups, store_root
from layerpick.validation.summary import (
    by_prompt_document,
    costs,
    document,
    labelled_failures,
    static_document,
    static_name,
)
from layerpick.validation.tasks import resolve_tasks
from layerpick.validation.transformed import transformed_setups

logger = logging.getLogger(__name__)

RESULTS_DIR = "results"


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
    check_before_loading(
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
    select = read_report(config.report)
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
    check_report(select, setup)
    chosen = (
        sorted(setup.slots)
        if config.exported_dir
        else parse_layers(config.layers, setup.num_layers, select.selected_layer if select else None)
    )
    cache = ResultCache(results)
    with ValidationBars(len(specs) * (len(setups) + len(statics)), config.progress) as bars:
        runs = [run_setup(one, specs, chosen, cache, bars) for one in setups]
        static_runs = [run_setup(one, specs, sorted(one.slots), cache, bars) for one in statics]
    data = document(setup, specs, runs[0], chosen, select, started, config.choice)
    if len(setups) > 1:
        data = {**data, **by_prompt_document(setups, runs, chosen)}
        data["pair_frontier"] = pair_frontier_section(data["by_prompt"], costs(setup.facts), chosen, config.choice)
        data["failures"] = labelled_failures([(one.variant, outcomes) for one, outcomes in zip(setups, runs)])
    if statics:
        data["static_exports"] = static_document(statics, static_runs, data["mean_over"])
        labelled = [(f"static {static_name(one)}", outcomes) for one, outcomes in zip(statics, static_runs)]
        data["failures"] = {**data["failures"], **labelled_failures(labelled)}
    data["documents_by"] = describe_documents(setup)
    data["results_dir"] = RESULTS_DIR if results == output else str(results.resolve() / RESULTS_DIR)
    report = ValidationReport.from_json({"format": ValidationReport.FORMAT, **data}, str(output / VALIDATION_FILE))
    return ValidationRun(report, output, tuple(_write(report, output, select)))


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
