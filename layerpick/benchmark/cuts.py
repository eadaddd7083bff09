"""Several cuts of one model against its full model in one run: `layerpick bench SOURCE --layers 6,13,28`.

Owns: which layers to cut (a list, or `frontier`: the frontier layers of a validation.json), the cut
directories, the run, and `CutsResult`. Every cut and the full model are loaded in one process and timed
side by side on the same batches, interleaved (`layerpick.benchmark.timing`), at every batch size; peak memory
per directory in fresh processes (`layerpick.benchmark.memory`). Each cut is set against its ideal speed-up and
parameters kept (`layerpick.core.cost`) and, when a validation is given, its validated mean task score.
Batch sizes above the text count are timed, and labelled, at the text count, as `layerpick bench DIR` does.

The full model is a sentence-transformers directory with every block: the baseline of an export (its
tokenizer, pooling and normalisation with the full weights, as `layerpick bench DIR` builds it; for a static
export, its full model exported at its last layer), or, for a model name, the model exported at its last
layer. A cut is that directory with its config cut to k blocks and the same weight files linked: loading
reads the first k blocks only, so it is the export at layer k without writing its weights again. A cut's size
on disk is what its export would weigh: the full weight files' bytes scaled by the parameters kept.

Static exports named with `--static` are loaded and timed in the same interleaved run, as peers of the cuts
(`layerpick.benchmark.statics`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterator

from layerpick._util.documents import Document
from layerpick._util.torch_threads import threads as torch_threads
from layerpick.benchmark.baseline import (
    WEIGHT_SUFFIXES,
    baseline_name,
    build_baseline_dir,
    build_static_baseline_dir,
    full_model_dir,
    is_static_export,
    transformer_dir,
    weights_bytes,
)
from layerpick.benchmark.config import BenchConfig, BenchError
from layerpick.benchmark.memory import all_reset, measure_memory, memory_method
from layerpick.benchmark.statics import StaticPeer, StaticRow, check_statics, static_rows
from layerpick.benchmark.statics import notes as static_notes
from layerpick.benchmark.timing import split_batches, time_side_by_side
from layerpick.core import surgery
from layerpick.core.cost import LayerCosts, layer_costs_for_config
from layerpick.core.layer_list import parse_layer_list
from layerpick.core.models import LoadOptions
from layerpick.errors import ReportFormatError
from layerpick.validation.result import ValidationReport

logger = logging.getLogger(__name__)

FULL = "full"


@dataclass(frozen=True)
class CutRow:
    """One cut at one batch size; ratios are cut / full (a speed-up above 1 is faster)."""

    layer: int
    batch_size: int
    texts_per_s: float
    full_texts_per_s: float
    measured_speedup: float
    ideal_speedup: float
    latency_median_ms: float
    full_latency_median_ms: float
    peak_memory_bytes: int | None
    memory_ratio: float | None
    params_kept: int
    validated_score: float | None
    size_bytes: int | None = None  # what the export at layer k would weigh on disk (full weights x share kept)


@dataclass(frozen=True)
class CutsResult(Document):
    """cuts.json ("layerpick-cuts/1"): every cut against the full model at every batch size, from one run."""

    model: str
    num_layers: int
    layers: list[int]
    rows: list[CutRow]
    params_full: int
    full_peak_memory_bytes: dict[int, int | None]
    full_validated_score: float | None
    texts: int
    repeats: int
    device: str
    threads: int
    seq_length: int
    memory_method: str | None
    validation: str | None
    notes: list[str] = field(default_factory=list)
    statics: list[StaticRow] = field(default_factory=list)  # static exports timed in the same run
    full_size_bytes: int | None = None  # the full model's weight files

    FORMAT: ClassVar[str] = "layerpick-cuts/1"
    WHAT: ClassVar[str] = "a layerpick cuts.json"
    NOUN: ClassVar[str] = "cuts"
    REQUIRED: ClassVar[tuple[str, ...]] = ("model", "num_layers", "layers", "rows")

    @classmethod
    def _decode(cls, values: dict[str, Any], extra: dict[str, Any], where: str) -> CutsResult:
        memory = {int(size): peak for size, peak in (values.get("full_peak_memory_bytes") or {}).items()}
        return cls(
            **{
                **values,
                "rows": [CutRow(**row) for row in values["rows"]],
                "statics": [StaticRow(**row) for row in values.get("statics", [])],
                "full_peak_memory_bytes": memory,
            }
        )

    def row(self, layer: int, batch_size: int) -> CutRow:
        return next(r for r in self.rows if r.layer == layer and r.batch_size == batch_size)


@dataclass(frozen=True)
class CutsPlan:
    """What to measure, checked before anything is loaded or written."""

    source: str
    exported: Path | None  # the source is an export: its baseline is the full model
    num_layers: int
    layers: list[int]
    validation: ValidationReport | None
    validation_path: str | None
    statics: tuple[StaticPeer, ...] = ()  # static exports to time beside the cuts


def plan_cuts(
    source: str,
    layers: str,
    validation: Path | None = None,
    baseline: str | None = None,
    statics: tuple[str | Path, ...] = (),
) -> CutsPlan:
    """The source (an exported directory or a model), its layer count, the layers to cut and the static exports
    to time beside them."""
    from layerpick.exporting.metadata import read_metadata

    path = Path(source).expanduser()
    exported = path if (path / "modules.json").is_file() else None
    name = baseline_name(path, baseline, read_metadata(path)) if exported else source
    config = _config(full_model_dir(name))
    num_layers = int(config.num_hidden_layers)
    data = _read_validation(validation, num_layers) if validation else None
    chosen = parse_cut_layers(layers, num_layers, data)
    peers = check_statics(statics, num_layers)
    return CutsPlan(name, exported, num_layers, chosen, data, str(validation) if validation else None, peers)


def parse_cut_layers(text: str, num_layers: int, validation: ValidationReport | None) -> list[int]:
    """`frontier` (a validation's frontier layers, needs `validation`) or comma-separated layers in 1..L
    (the last layer is the full model itself, so it is dropped unless it is the only one)."""
    words = {"frontier": lambda: _frontier(validation, num_layers)}
    chosen = parse_layer_list(
        text, first=1, last=num_layers, words=words, grammar="comma-separated layers or 'frontier'", error=BenchError
    )
    return [k for k in chosen if k < num_layers] or [num_layers]


def _frontier(validation: ValidationReport | None, num_layers: int) -> list[int]:
    if validation is None:
        raise BenchError("--layers frontier needs --validation (a validation.json with every layer scored)")
    chosen = [k for k in (validation.frontier or {}).get("layers", []) if 1 <= k < num_layers]
    if not chosen:
        raise BenchError("the validation's frontier holds no layer below the last to bench")
    return chosen


def run_cuts(
    plan: CutsPlan,
    config: BenchConfig = BenchConfig(),
    load_options: LoadOptions = LoadOptions(),
    *,
    progress: bool = False,
) -> CutsResult:
    """Time every cut of `plan` against the full model side by side; memory per directory when asked."""
    from layerpick.benchmark.run import bench_texts, capped_config
    from layerpick.core.devices import resolve_device

    config, notice = capped_config(config)
    device, texts = resolve_device(config.device), bench_texts(config.texts, config.seed)
    with torch_threads(config.threads) as threads, tempfile.TemporaryDirectory(prefix="layerpick-cuts-") as work:
        full = _full_directory(plan, Path(work), load_options, progress)
        dirs = {
            FULL: full,
            **{k: cut_directory(full, k, Path(work)) for k in plan.layers if k < plan.num_layers},
            **{peer.key: peer.path for peer in plan.statics},
        }
        timings = _time(dirs, texts, config, device, progress)
        memory = (
            {key: measure_memory(path, texts, config.batch_sizes, device, threads) for key, path in dirs.items()}
            if config.memory
            else None
        )
        costs = layer_costs_for_config(_config(transformer_dir(full)))
        full_bytes = weights_bytes(full)
    result = _result(plan, config, timings, memory, costs, len(texts), device, threads, full_bytes)
    return dataclasses.replace(result, notes=result.notes + [notice]) if notice else result


def cut_directory(full: Path, k: int, work: Path) -> Path:
    """`full` with its transformer's config cut to k blocks; weight files linked, every other file copied."""
    target = work / f"layer-{k}"
    shutil.copytree(full, target, copy_function=_link_weights_copy_others)
    module = target / transformer_dir(full).relative_to(full)
    surgery.cut_config(_config(module), k).save_pretrained(module)
    return target


def _link_weights_copy_others(source: str, target: str) -> None:
    if Path(source).suffix in WEIGHT_SUFFIXES:
        os.symlink(Path(source).resolve(), target)
    else:
        shutil.copy2(source, target)


def _full_directory(plan: CutsPlan, work: Path, load_options: LoadOptions, progress: bool) -> Path:
    if plan.exported is not None:
        from layerpick.exporting.metadata import read_metadata

        metadata = read_metadata(plan.exported)
        if is_static_export(metadata):
            return build_static_baseline_dir(plan.source, metadata, work, progress)
        return build_baseline_dir(plan.exported, full_model_dir(plan.source), work)
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting import export_model

    target = work / "full"
    export_model(plan.source, plan.num_layers, target, ExportConfig(progress=progress), load_options=load_options)
    return target


def _time(dirs: dict, texts: list[str], config: BenchConfig, device: str, progress: bool) -> dict:
    from layerpick._util.progress import progress_bar
    from layerpick.exporting.load import load_sentence_transformer

    with _quiet_loading():
        models = {key: load_sentence_transformer(path, device) for key, path in dirs.items()}
    steps = len(config.batch_sizes) * config.repeats * len(models)
    with progress_bar("benchmarking cuts", steps, enabled=progress) as advance:
        return {
            size: time_side_by_side(models, split_batches(texts, size), config.repeats, device, advance)
            for size in config.batch_sizes
        }


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """A cut loads the first k blocks of the full weight files; transformers lists the rest as unexpected."""
    import transformers

    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers.logging.set_verbosity(level)


def _result(
    plan: CutsPlan,
    config: BenchConfig,
    timings: dict,
    memory: dict | None,
    costs: LayerCosts,
    texts: int,
    device: str,
    threads: int,
    full_bytes: int | None = None,
) -> CutsResult:
    means = plan.validation.mean_by_layer if plan.validation else None
    rows = []
    for k in plan.layers:
        for size in config.batch_sizes:
            cut, full = timings[size].get(k, timings[size][FULL]), timings[size][FULL]
            peak = memory[k][size]["peak_memory_bytes"] if memory and k in memory else None
            full_peak = memory[FULL][size]["peak_memory_bytes"] if memory else None
            rows.append(
                CutRow(
                    layer=k,
                    batch_size=size,
                    texts_per_s=cut.texts_per_s,
                    full_texts_per_s=full.texts_per_s,
                    measured_speedup=cut.texts_per_s / full.texts_per_s,
                    ideal_speedup=costs.speedup(k),
                    latency_median_ms=cut.latency_median_ms,
                    full_latency_median_ms=full.latency_median_ms,
                    peak_memory_bytes=peak if peak is not None else full_peak,
                    memory_ratio=(peak if peak is not None else full_peak) / full_peak if full_peak else None,
                    params_kept=costs.params_kept[k],
                    validated_score=means[k] if means else None,
                    size_bytes=round(full_bytes * costs.params_kept[k] / costs.params_full) if full_bytes else None,
                )
            )
    full_peaks = {size: memory[FULL][size]["peak_memory_bytes"] for size in config.batch_sizes} if memory else {}
    return CutsResult(
        model=plan.source,
        num_layers=plan.num_layers,
        layers=plan.layers,
        rows=rows,
        params_full=costs.params_full,
        full_peak_memory_bytes=full_peaks,
        full_validated_score=means[plan.num_layers] if means else None,
        texts=texts,
        repeats=config.repeats,
        device=device,
        threads=threads,
        seq_length=costs.seq_length,
        memory_method=memory_method(device, all_reset(memory)) if memory else None,
        validation=plan.validation_path,
        notes=[
            f"full model: {_origin(plan)}; each cut is it with the config cut to k blocks (the same weights, "
            "the first k blocks loaded)",
            f"torch intra-op threads: {threads}",
            *static_notes(plan.statics),
        ],
        statics=static_rows(plan.statics, timings, memory, config.batch_sizes, FULL),
        full_size_bytes=full_bytes,
    )


def _origin(plan: CutsPlan) -> str:
    return f"the baseline of the export {plan.exported}" if plan.exported else "the model exported at its last layer"


def _config(directory: Path):
    import transformers

    return transformers.AutoConfig.from_pretrained(str(directory))


def _read_validation(path: Path, num_layers: int) -> ValidationReport:
    try:
        report = ValidationReport.read(path)
    except ReportFormatError as error:
        raise BenchError(str(error)) from None
    if report.num_layers != num_layers:
        raise BenchError(f"{path} is for a model with {report.num_layers} layers; this one has {num_layers}")
    return report
