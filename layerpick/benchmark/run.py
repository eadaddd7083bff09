"""`layerpick bench`'s run: an exported (cut) sentence-transformers model against its full model, side by side.

Owns: the deterministic text set, the run (baseline from `layerpick.benchmark.baseline`, timing from
`layerpick.benchmark.timing`, memory from `layerpick.benchmark.memory`, all under one torch thread count), and
`BenchResult` with its per-model facts (layers, parameter count, weight file size) and ratios. A batch size
above the text count is timed, and its row labelled, at the text count (`BenchConfig.capped`): the notice is
logged and kept in the result's notes.

Every ratio is exported / baseline: a throughput ratio above 1 and latency and memory ratios below 1 mean the
export is faster and smaller. `threads` in the result is torch's intra-op thread count during the run
(`--threads`, or torch's default); the memory probes run with the same count.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from layerpick._util.documents import Document
from layerpick._util.torch_threads import threads as torch_threads
from layerpick.benchmark.baseline import (
    baseline_name,
    build_baseline_dir,
    build_static_baseline_dir,
    full_model_dir,
    is_static_export,
    weights_bytes,
)
from layerpick.benchmark.config import BenchConfig, BenchError
from layerpick.benchmark.memory import all_reset, measure_memory, memory_method
from layerpick.benchmark.timing import Measurement, split_batches, time_side_by_side
from layerpick.core.calibration import load_calibration
from layerpick.exporting.load import load_encoder, load_sentence_transformer
from layerpick.exporting.metadata import ExportMetadata, read_metadata

__all__ = [
    "BenchConfig",
    "BenchError",
    "BenchResult",
    "BenchRow",
    "ModelFacts",
    "bench_texts",
    "capped_config",
    "run_bench",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelFacts:
    name: str
    path: str
    layers: int | None
    parameters: int
    weights_bytes: int


@dataclass(frozen=True)
class BenchRow:
    batch_size: int
    exported: Measurement
    baseline: Measurement
    throughput_ratio: float | None
    latency_median_ratio: float | None
    latency_p90_ratio: float | None
    memory_ratio: float | None


@dataclass(frozen=True)
class BenchResult(Document):
    """bench.json ("layerpick-bench/1"): an export against the full model it was cut from, batch by batch."""

    exported: ModelFacts
    baseline: ModelFacts
    rows: list[BenchRow]
    parameter_ratio: float | None
    weights_ratio: float | None
    texts: int
    repeats: int
    device: str
    threads: int
    memory_method: str | None
    notes: list[str] = field(default_factory=list)
    backend: str = "torch"  # what ran the export; the full model always runs on torch
    transform: dict[str, Any] | None = None  # the export's post-pooling transform and its measured cost

    FORMAT: ClassVar[str] = "layerpick-bench/1"
    WHAT: ClassVar[str] = "a layerpick bench.json"
    NOUN: ClassVar[str] = "bench"
    REQUIRED: ClassVar[tuple[str, ...]] = ("exported", "baseline", "rows")

    @classmethod
    def _decode(cls, values: dict[str, Any], extra: dict[str, Any], where: str) -> BenchResult:
        rows = [
            BenchRow(**{**row, "exported": Measurement(**row["exported"]), "baseline": Measurement(**row["baseline"])})
            for row in values["rows"]
        ]
        return cls(
            **{
                **values,
                "exported": ModelFacts(**values["exported"]),
                "baseline": ModelFacts(**values["baseline"]),
                "rows": rows,
            }
        )

    def speedups(self) -> dict[str, dict[str, float | None]]:
        """The ratios per batch size (export / full), as the model card's speed table shows them."""
        return {
            f"batch {row.batch_size}": {
                "throughput x": row.throughput_ratio,
                "latency (median) x": row.latency_median_ratio,
                "peak memory x": row.memory_ratio,
            }
            for row in self.rows
        }


def bench_texts(count: int, seed: int = 0) -> list[str]:
    """`count` natural sentences of mixed lengths from the embedded calibration set (cycled when more)."""
    pool = load_calibration(seed=seed).texts
    if count <= len(pool):
        return load_calibration(limit=count, seed=seed).texts
    return [pool[i % len(pool)] for i in range(count)]


@dataclass(frozen=True)
class _Run:
    """What one run measures: the two directories, the texts, and where."""

    paths: dict[str, Path]
    name: str
    full: Path
    texts: list[str]
    device: str
    config: BenchConfig
    notice: str | None = None  # which batch sizes were capped at the text count


def capped_config(config: BenchConfig) -> tuple[BenchConfig, str | None]:
    """`config` checked, its batch sizes capped at the texts timed; the notice (None when none was) is logged."""
    config, notice = config.validate().capped()
    if notice:
        logger.warning(notice)
    return config, notice


def run_bench(directory: str | Path, config: BenchConfig = BenchConfig(), *, progress: bool = False) -> BenchResult:
    """Measure the exported model in `directory` against its full model, side by side."""
    from layerpick.core.devices import resolve_device

    config, notice = capped_config(config)
    exported = Path(directory).expanduser()
    if not (exported / "modules.json").is_file():
        raise BenchError(f"not a sentence-transformers directory (no modules.json): {exported}")
    metadata = read_metadata(exported)
    static = is_static_export(metadata)
    if static and config.backend != "torch":
        raise BenchError(f"{exported} is a static export (a table, no ONNX graph): bench it with --backend torch")
    name = baseline_name(exported, config.baseline, metadata)
    full = None if static else full_model_dir(name)
    device, texts = resolve_device(config.device), bench_texts(config.texts, config.seed)
    with torch_threads(config.threads) as threads, tempfile.TemporaryDirectory(prefix="layerpick-bench-") as work:
        baseline = (
            build_static_baseline_dir(name, metadata, Path(work), progress)
            if static
            else build_baseline_dir(exported, full, Path(work))
        )
        paths = {"exported": exported, "baseline": baseline}
        run = _Run(paths, name, full or baseline, texts, device, config, notice)
        facts, timings = _time(run, progress)
        memory = (
            {
                role: measure_memory(
                    path, texts, config.batch_sizes, device, threads, config.backend if role == "exported" else "torch"
                )
                for role, path in paths.items()
            }
            if config.memory
            else None
        )
    return _result(run, facts, timings, memory, threads, metadata)


def _time(run: _Run, progress: bool) -> tuple[dict[str, ModelFacts], dict[int, dict[str, Measurement]]]:
    """Load both models, read their facts and time them side by side at every batch size."""
    from layerpick._util.progress import progress_bar

    config = run.config
    models = {
        "exported": load_encoder(run.paths["exported"], run.device, config.backend),
        "baseline": load_sentence_transformer(run.paths["baseline"], run.device),
    }
    facts = {
        "exported": _facts(str(run.paths["exported"]), run.paths["exported"], models["exported"]),
        "baseline": _facts(run.name, run.full, models["baseline"]),
    }
    steps = len(config.batch_sizes) * config.repeats * 2
    with progress_bar("benchmarking", steps, enabled=progress) as advance:
        timings = {
            size: time_side_by_side(models, split_batches(run.texts, size), config.repeats, run.device, advance)
            for size in config.batch_sizes
        }
    return facts, timings


def _result(
    run: _Run,
    facts: dict[str, ModelFacts],
    timings: dict[int, dict[str, Measurement]],
    memory: dict[str, dict[int, dict]] | None,
    threads: int,
    metadata: ExportMetadata | None,
) -> BenchResult:
    config = run.config
    return BenchResult(
        exported=facts["exported"],
        baseline=facts["baseline"],
        rows=[_row(size, timings[size], memory) for size in config.batch_sizes],
        parameter_ratio=_ratio(facts["exported"].parameters, facts["baseline"].parameters),
        weights_ratio=_ratio(facts["exported"].weights_bytes, facts["baseline"].weights_bytes),
        texts=len(run.texts),
        repeats=config.repeats,
        device=run.device,
        threads=threads,
        memory_method=memory_method(run.device, all_reset(memory)) if memory is not None else None,
        notes=_notes(run.name, config, metadata, threads) + ([run.notice] if run.notice else []),
        backend=config.backend,
        transform=transform_cost(run.paths["exported"], config.batch_sizes, timings, metadata),
    )


def transform_cost(
    directory: Path,
    batch_sizes,
    timings: dict[int, dict[str, Measurement]],
    metadata: ExportMetadata | None,
    repeats: int = 50,
) -> dict[str, Any] | None:
    """The Dense module's own time per text at each batch size (a matrix product on random pooled vectors of
    its input width, median of `repeats`), and its share of the export's measured time per text."""
    import time

    import torch

    from layerpick.exporting.load import dense_module

    dense = dense_module(directory)
    if dense is None:
        return None
    weight, bias = (torch.from_numpy(part) for part in dense)
    cost = {}
    for size in batch_sizes:
        vectors = torch.randn(size, weight.shape[1])
        samples = []
        for _ in range(repeats):
            began = time.perf_counter()
            torch.nn.functional.linear(vectors, weight, bias)
            samples.append(time.perf_counter() - began)
        per_text = sorted(samples)[len(samples) // 2] / size
        total = 1.0 / timings[size]["exported"].texts_per_s if timings[size]["exported"].texts_per_s else None
        cost[f"batch {size}"] = {
            "us_per_text": per_text * 1e6,
            "share_of_export_time": per_text / total if total else None,
        }
    described = (metadata.transform if metadata else None) or {}
    return {
        "name": described.get("name"),
        "input_dim": int(weight.shape[1]),
        "output_dim": int(weight.shape[0]),
        "cost": cost,
    }


def _facts(name: str, weights_dir: Path, model) -> ModelFacts:
    if hasattr(model, "graph_bytes"):  # an OnnxEncoder: its weights are the graph file
        return ModelFacts(
            name=name,
            path=str(model.path / model.file),
            layers=model.num_layers,
            parameters=model.parameter_count(),
            weights_bytes=model.graph_bytes,
        )
    inner = getattr(model[0], "auto_model", None)
    layers = getattr(getattr(inner, "config", None), "num_hidden_layers", None)
    if type(model[0]).__name__ == "StaticEmbedding":
        layers = 0  # a table: no transformer layer runs
    return ModelFacts(
        name=name,
        path=str(weights_dir),
        layers=layers,
        parameters=sum(p.numel() for p in model.parameters()),
        weights_bytes=weights_bytes(weights_dir),
    )


def _row(size: int, timing: dict[str, Measurement], memory: dict[str, dict[int, dict]] | None) -> BenchRow:
    exported, baseline = timing["exported"], timing["baseline"]
    if memory is not None:
        exported = _with_memory(exported, memory["exported"][size])
        baseline = _with_memory(baseline, memory["baseline"][size])
    return BenchRow(
        batch_size=size,
        exported=exported,
        baseline=baseline,
        throughput_ratio=_ratio(exported.texts_per_s, baseline.texts_per_s),
        latency_median_ratio=_ratio(exported.latency_median_ms, baseline.latency_median_ms),
        latency_p90_ratio=_ratio(exported.latency_p90_ms, baseline.latency_p90_ms),
        memory_ratio=_ratio(exported.peak_memory_bytes, baseline.peak_memory_bytes),
    )


def _with_memory(measurement: Measurement, peak: dict) -> Measurement:
    return Measurement(
        **{
            **asdict(measurement),
            "peak_memory_bytes": peak["peak_memory_bytes"],
            "peak_rss_bytes": peak["peak_rss_bytes"],
        }
    )


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return float(numerator) / float(denominator)


def _notes(name: str, config: BenchConfig, metadata: ExportMetadata | None, threads: int) -> list[str]:
    origin = "--baseline" if config.baseline else "layerpick.json"
    notes = [
        f"baseline {name} (from {origin}): "
        + (
            "the full model exported at its last layer, with the pooling and normalisation the static table was "
            "distilled with; the export is a static table (model2vec), no transformer runs"
            if is_static_export(metadata)
            else "the export's tokenizer, pooling and normalisation with the full model's weights"
        )
    ]
    if metadata is not None:
        notes += [str(note) for note in metadata.source.get("notes") or []]
    chosen = "from --threads" if config.threads is not None else "torch's setting, --threads not given"
    notes.append(f"torch intra-op threads: {threads} ({chosen}), for the timing and the memory probes")
    if metadata is not None and metadata.transform:
        notes.append(
            "the export runs its post-pooling transform (a Dense module) inside the timed encode; the "
            "baseline, the full model as it is, runs none"
        )
    if config.backend != "torch":
        notes.append(
            f"the export runs on {config.backend} (onnxruntime, CPU, {threads} intra-op threads); "
            "the full model on torch"
        )
    return notes
