"""The public verbs, one per stage: `select`, `validate`, `export`, `heal`, `bench`, `run`, `compare`, `serve`.

One argument pattern for all: what is worked on (a model, an export folder, report files), then the stage's
config object (`SelectConfig`, `ValidateConfig`, `ExportConfig`, `HealConfig`, `BenchConfig`, `RunConfig`,
`ServeConfig`; None takes its defaults), then keyword-only `load` (how a model is loaded, `LoadOptions`),
`output` (where files go), `overwrite` (for the verbs that replace an earlier output) and `progress` (bars on
stderr). Each returns the stage's typed result. The stage packages behind them are imported on first call, so importing
`layerpick` stays cheap. Arguments are checked at the door (`_util.arguments`): a path may be a `str` or an
`os.PathLike`, a list may be one item alone, and a wrong type is one `ArgumentError` before any work.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from layerpick._util.arguments import config_or_default, path_list, path_text, with_paths

__all__ = ["bench", "compare", "export", "heal", "run", "select", "serve", "validate"]

if TYPE_CHECKING:
    from layerpick.benchmark import BenchConfig, BenchResult
    from layerpick.comparison import Comparison
    from layerpick.core.models import LoadOptions
    from layerpick.exporting import ExportConfig, ExportResult
    from layerpick.healing import HealConfig, HealReport, HealSweep
    from layerpick.selection import SelectConfig
    from layerpick.selection.result import SelectReport
    from layerpick.serving import ServeConfig
    from layerpick.validation import ValidateConfig, ValidationRun
    from layerpick.workflow import RunConfig, RunResult


def select(
    model: str,
    config: SelectConfig | None = None,
    *,
    load: LoadOptions | None = None,
    output: str | Path | None = None,
    progress: bool = True,
) -> SelectReport:
    """Score every layer of `model` on the calibration texts and choose one; with `output`, also write
    report.json, report.md and metrics.png there."""
    from layerpick.core.models import LoadOptions
    from layerpick.selection.config import SelectConfig
    from layerpick.selection.job import run_select, select_and_write

    model, load = path_text(model, "model"), config_or_default(load, LoadOptions, "load")
    config = _select_paths(config_or_default(config, SelectConfig, "config"))
    config = dataclasses.replace(config, collect=dataclasses.replace(config.collect, progress=progress))
    if output is None:
        return run_select(model, load, config)
    report, _ = select_and_write(model, load, config, Path(path_text(output, "output")))
    return report


def validate(
    model: str | None,
    config: ValidateConfig | None = None,
    *,
    load: LoadOptions | None = None,
    output: str | Path | None = None,
    progress: bool = True,
) -> ValidationRun:
    """Evaluate `model`'s layers (or the export in `config.exported_dir`, with `model` None) on `config.tasks`
    with MTEB's evaluators; validation.json and the plots go to `output` (None: layerpick-out/<model>/validation)."""
    from layerpick.core.models import LoadOptions
    from layerpick.validation.config import ValidateConfig
    from layerpick.validation.run import run_validation

    model = None if model is None else path_text(model, "model")
    config = with_paths(
        config_or_default(config, ValidateConfig, "config"),
        texts=("fit_texts",),
        paths=("report", "output_dir", "exported_dir", "store_dir", "result_cache"),
        text_lists=("tasks",),
        path_lists=("task_data", "static_exports"),
    )
    output_dir = Path(path_text(output, "output")) if output is not None else config.output_dir
    config = dataclasses.replace(config, progress=progress, output_dir=output_dir)
    load = config_or_default(load, LoadOptions, "load")
    return run_validation(model, list(config.tasks), config, load_options=load)


def export(
    model: str,
    config: ExportConfig | None = None,
    *,
    load: LoadOptions | None = None,
    output: str | Path,
    overwrite: bool = False,
    progress: bool = True,
) -> ExportResult:
    """Cut `model` after block `config.layer` (or the layer `config.report` chose), save it as a
    sentence-transformers folder at `output` (ONNX or a static table per `config.format`), parity-checked."""
    from layerpick.core.models import LoadOptions
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model

    model, load = path_text(model, "model"), config_or_default(load, LoadOptions, "load")
    config = with_paths(config_or_default(config, ExportConfig, "config"), texts=("fit_texts",), paths=("report",))
    config = dataclasses.replace(config, overwrite=overwrite, progress=progress)
    return export_model(model, config.layer, Path(path_text(output, "output")), config, load_options=load)


def heal(
    model: str,
    config: HealConfig | None = None,
    *,
    load: LoadOptions | None = None,
    output: str | Path,
    overwrite: bool = False,
    progress: bool = True,
) -> HealReport | HealSweep:
    """Cut `model` after block `config.layer` and train the cut on `config.fit_texts` to reproduce the full model's
    sentence vectors; write it at `output` as an export whose layerpick.json carries the heal (fidelity before and
    after on held-out texts). An interrupted heal resumes from its last epoch when called again the same way.
    With `config.layers` ("2,3,4", "all") each cut is healed and the shallowest whose held-out cosine is at least
    1 - `config.max_loss` is written: a `HealSweep` (its `.report` is the kept cut's HealReport)."""
    from layerpick.core.models import LoadOptions
    from layerpick.healing.config import HealConfig
    from layerpick.healing.sweep import heal_or_sweep

    model, load = path_text(model, "model"), config_or_default(load, LoadOptions, "load")
    config = config_or_default(config, HealConfig, "config")
    config = with_paths(config, text_lists=("fit_texts",) if config.fit_texts is not None else ())
    config = dataclasses.replace(config, overwrite=overwrite, progress=progress)
    return heal_or_sweep(model, None, Path(path_text(output, "output")), config, load_options=load)


def bench(
    export_dir: str | Path,
    config: BenchConfig | None = None,
    *,
    output: str | Path | None = None,
    progress: bool = True,
) -> BenchResult:
    """Time the export in `export_dir` against the full model it was cut from, interleaved in one process; with
    `output`, also write the result there as bench.json."""
    from layerpick._util.atomic import write_json_atomic
    from layerpick.benchmark.run import BenchConfig, run_bench

    export_dir, config = path_text(export_dir, "export_dir"), config_or_default(config, BenchConfig, "config")
    target = None if output is None else Path(path_text(output, "output"))
    result = run_bench(export_dir, config, progress=progress)
    if target is not None:
        write_json_atomic(target, result.to_json())
    return result


def run(
    model: str,
    config: RunConfig | None = None,
    *,
    load: LoadOptions | None = None,
    output: str | Path | None = None,
    progress: bool = True,
) -> RunResult:
    """select, validate (with `config.tasks`), export and bench `model` into `output` (None:
    layerpick-out/<model>/run), reusing finished stages, then write the run's report."""
    from layerpick.core.models import LoadOptions
    from layerpick._util.outputs import model_output_dir
    from layerpick.selection.config import SelectConfig
    from layerpick.workflow.run import RunConfig, run_workflow

    model, load = path_text(model, "model"), config_or_default(load, LoadOptions, "load")
    config = with_paths(
        config_or_default(config, RunConfig, "config"),
        text_lists=("tasks",),
        path_lists=("task_data", "static_exports"),
    )
    config = dataclasses.replace(config, select=_select_paths(config_or_default(config.select, SelectConfig, "select")))
    target = Path(path_text(output, "output")) if output is not None else model_output_dir(model) / "run"
    return run_workflow(model, target, load, config, progress=progress)


def compare(reports: Sequence[str | Path], *, output: str | Path, overwrite: bool = False) -> Comparison:
    """Overlay several select reports and validations (files or folders) on relative depth into `output`."""
    from layerpick.comparison.run import compare_reports

    return compare_reports(list(path_list(reports, "reports")), path_text(output, "output"), overwrite=overwrite)


def serve(export_dir: str | Path, config: ServeConfig | None = None) -> None:
    """Serve the export in `export_dir` over HTTP (OpenAI-style /v1/embeddings) until SIGTERM, SIGINT or SIGHUP."""
    from layerpick.serving.server import ServeConfig, serve as serve_forever

    serve_forever(path_text(export_dir, "export_dir"), config_or_default(config, ServeConfig, "config"))


def _select_paths(config: SelectConfig) -> SelectConfig:
    return with_paths(config, texts=("calibration", "fit_texts"))
