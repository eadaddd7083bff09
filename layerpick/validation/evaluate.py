"""One validation's evaluations: every (task, layer) pair through `mteb.evaluate`, or read back when done.

Owns: each pair as one `mteb.evaluate` call on a fresh task with the per-layer encoder view, its TaskResult
written by mteb's own ResultCache (under `<output>/results/layerpick__<model>__layer-<k>/...`, or under
`$MTEB_CACHE/results/...` when MTEB_CACHE is set); a pair whose complete result is already there (same dataset
revision, no missing split or subset) read, not recomputed; a task that fails recorded with its error in one
line while the other tasks still run (a full disk stops them all); each task's main score; and what makes mteb's
scoring fast and quiet (labels as arrays, single-threaded BLAS, no `datasets` progress bars).
"""

from __future__ import annotations

import logging
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

import mteb
import numpy as np
from mteb import ResultCache
from mteb.results import TaskResult

from layerpick._util.disk import is_disk_full
from layerpick.errors import LayerpickError
from layerpick.validation.bars import ValidationBars
from layerpick.validation.sources import Setup
from layerpick.validation.tasks import TaskSpec

logger = logging.getLogger(__name__)


@dataclass
class TaskOutcome:
    spec: TaskSpec
    scores: dict[int, float] = field(default_factory=dict)
    failure: str | None = None
    ran: int = 0
    reused: int = 0
    seconds: float = 0.0


def run_setup(
    setup: Setup, specs: list[TaskSpec], layers: list[int], cache: ResultCache, bars: ValidationBars
) -> list[TaskOutcome]:
    """Every task of one setup (a model's layers under one template and transform, an export, a static table)
    evaluated at `layers`, the progress shown on `bars`."""
    setup.source.progress = bars.encoding
    return [_run_task(spec, layers, setup, cache, bars) for spec in specs]


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
            outcome.failure = one_line(error)
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
        logger.warning("unreadable result %s (%s); evaluating again", path, one_line(error))
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


def one_line(error: BaseException) -> str:
    """An error in one line: its type and the first line of its message."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__
