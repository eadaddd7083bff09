"""The command lines that reproduce a `layerpick run` and each of its stages on their own.

Owns the mapping from `RunConfig` and `LoadOptions` back to CLI flags: only values that differ from the
CLI's defaults are written, and the `layerpick run` line parses back to the same stage keys (tested).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from layerpick._util.filenames import REPORT_FILE
from layerpick.benchmark.config import BenchConfig
from layerpick.exporting import onnx_flags
from layerpick.selection.config import SelectConfig
from layerpick.workflow.config import RunConfig

if TYPE_CHECKING:
    from layerpick.workflow.run import RunResult


def reproduce_commands(result: "RunResult") -> list[str]:
    """`layerpick run ...`, then select, validate (with tasks), export and bench as separate commands."""
    model, out, config = result.model, result.output, result.config
    load = result.load_options.cli_flags()
    commands = [
        [
            "layerpick",
            "run",
            model,
            *task_flags(config),
            *config.choice.flags(),
            "--output",
            str(out),
            *select_flags(config.select),
            *_export_flags(config),
            *_heal_flags(config),
            *_run_bench_flags(config.bench),
            *load,
        ]
    ]
    commands.append(
        ["layerpick", "select", model, "--output", str(out / "select"), *select_flags(config.select), *load]
    )
    if config.tasks:
        commands.append(
            [
                "layerpick",
                "validate",
                model,
                *task_flags(config),
                *_representation_flags(config),
                *_normalize_flags(config),
                "--report",
                str(out / "select" / REPORT_FILE),
                "--output",
                str(out / "validate"),
                "--store",
                str(out / "validate" / "store"),
                *config.choice.flags(),
                *load,
            ]
        )
    export = result.export.heal["command"] if result.export.is_healed else result.export.command
    lines = [shlex.join(words) for words in commands] + [export]
    if result.bench is not None and config.bench is not None:
        lines.append(shlex.join(["layerpick", "bench", str(result.export_dir), *_bench_flags(config.bench)]))
    return lines


def task_flags(config: RunConfig) -> list[str]:
    if not config.tasks:
        return []
    flags = ["--tasks", ",".join(config.tasks), "--layers", config.layers]
    return flags + [word for path in config.task_data for word in ("--task-data", str(path))]


def select_flags(select: SelectConfig) -> list[str]:
    default = SelectConfig()
    pairs = [
        ("--calibration", select.calibration, default.calibration),
        ("--field", select.field, default.field),
        ("--fit-texts", select.fit_texts, default.fit_texts),
        ("--transform", select.transform, default.transform),
        ("--limit", select.limit, default.limit),
        ("--metrics", select.metrics, default.metrics),
        ("--rule", select.rule, default.rule),
        ("--tolerance", select.tolerance, default.tolerance),
        ("--min-speedup", select.min_speedup, default.min_speedup),
        ("--batch-size", select.collect.batch_size, default.collect.batch_size),
        ("--max-length", select.collect.max_length, default.collect.max_length),
        ("--views", select.scoring.views, default.scoring.views),
        ("--alpha", select.scoring.alpha, default.scoring.alpha),
        ("--seed", select.scoring.seed, default.scoring.seed),
        ("--pooling", select.collect.pooling, default.collect.pooling),
        ("--representation", select.collect.representation, default.collect.representation),
        ("--prompt", select.prompt, default.prompt),
    ]
    return _changed(pairs) + (["--include-layer0"] if select.include_layer0 else [])


def _representation_flags(config: RunConfig) -> list[str]:
    collect, default = config.select.collect, SelectConfig().collect
    return _changed(
        [
            ("--pooling", collect.pooling, default.pooling),
            ("--representation", collect.representation, default.representation),
            ("--prompt", config.select.prompt, None),
        ]
    )


def _export_flags(config: RunConfig) -> list[str]:
    return _normalize_flags(config) + onnx_flags(config.format, config.quantize)


def _normalize_flags(config: RunConfig) -> list[str]:
    """None follows the model's own sentence-transformers pipeline: no flag."""
    return [] if config.normalize is None else ["--normalize" if config.normalize else "--no-normalize"]


def _heal_flags(config: RunConfig) -> list[str]:
    """run's own heal options (the heal's other settings are in the healed export's command, the next line)."""
    if config.heal is None:
        return ["--heal-layers", "none"]
    default = RunConfig()
    flags = [] if config.heal.layers == default.heal.layers else ["--heal-layers", str(config.heal.layers)]
    if config.heal.max_loss is not None:
        flags += ["--heal-max-loss", f"{config.heal.max_loss:g}"]
    if config.heal.epochs != default.heal.epochs or config.heal_minutes is None:
        flags += ["--heal-epochs", str(config.heal.epochs)]
    if config.heal_minutes is not None and config.heal_minutes != default.heal_minutes:
        flags += ["--heal-minutes", f"{config.heal_minutes:g}"]
    if config.heal.blocks != default.heal.blocks:
        flags += ["--heal-blocks", config.heal.blocks]
    return flags


def _run_bench_flags(bench: BenchConfig | None) -> list[str]:
    if bench is None:
        return ["--no-bench"]
    default = BenchConfig()
    flags = _changed(
        [
            ("--bench-batch-sizes", _sizes(bench.batch_sizes), _sizes(default.batch_sizes)),
            ("--bench-texts", bench.texts, default.texts),
            ("--bench-repeats", bench.repeats, default.repeats),
            ("--threads", bench.threads, default.threads),
        ]
    )
    return flags + ([] if bench.memory else ["--no-bench-memory"])


def _bench_flags(bench: BenchConfig) -> list[str]:
    default = BenchConfig()
    flags = _changed(
        [
            ("--baseline", bench.baseline, default.baseline),
            ("--batch-sizes", _sizes(bench.batch_sizes), _sizes(default.batch_sizes)),
            ("--texts", bench.texts, default.texts),
            ("--repeats", bench.repeats, default.repeats),
            ("--device", bench.device, default.device),
            ("--threads", bench.threads, default.threads),
        ]
    )
    return flags + ([] if bench.memory else ["--no-memory"])


def _changed(pairs: list[tuple[str, Any, Any]]) -> list[str]:
    return [word for flag, value, default in pairs if value != default for word in (flag, str(value))]


def _sizes(sizes: tuple[int, ...]) -> str:
    return ",".join(str(size) for size in sizes)
