"""Side-by-side speed and memory of an exported (cut) sentence-transformers model against its full model.

Owns: finding the full model (from `layerpick.json` or `--baseline`), building the baseline so that it
differs from the export only in its transformer weights and config (same tokenizer, pooling, normalisation
and max_seq_length: a copy of the exported directory with the full model's config and weights linked in),
the deterministic text set, the interleaved timing, the memory probes, and `BenchResult` with its ratios.

Method:
- Timing: both models are loaded in this process and timed on the same batches, alternating batch by batch
  (A B, B A, A B, ...), so that drift and bursts of other load fall on both. Throughput is texts per second
  of one pass over all texts (median over repeats); latency is per `encode` call of one full batch.
- Memory: each model runs in a fresh subprocess. On CPU: peak RSS (Linux VmHWM) minus the RSS before the
  model is loaded (torch, sentence-transformers and the architecture's code already imported); the peak at a
  batch size is the larger of the loading peak and the peak while embedding every text at that size (the
  kernel's peak mark is reset after loading and between batch sizes). On CUDA:
  `torch.cuda.max_memory_allocated`, reset before each batch size (the weights stay allocated, so included).
- Every ratio is exported / baseline: a throughput ratio above 1 and latency and memory ratios below 1 mean
  the export is faster and smaller.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from layerpick.calibration import load_calibration
from layerpick.errors import LayerpickError
from layerpick.serving import load_sentence_transformer, read_metadata

logger = logging.getLogger(__name__)

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


class BenchError(LayerpickError):
    """A benchmark that cannot run: no baseline, bad settings, a failed memory probe."""


@dataclass(frozen=True)
class BenchConfig:
    baseline: str | None = None
    batch_sizes: tuple[int, ...] = (1, 32)
    texts: int = 128
    repeats: int = 3
    device: str = "cpu"
    memory: bool = True
    seed: int = 0

    def validate(self) -> "BenchConfig":
        if not self.batch_sizes or any(size < 1 for size in self.batch_sizes):
            raise BenchError(f"batch sizes must be positive integers (got {list(self.batch_sizes)})")
        if self.texts < 1 or self.repeats < 1:
            raise BenchError(f"--texts and --repeats must be at least 1 (got {self.texts}, {self.repeats})")
        return self


@dataclass(frozen=True)
class ModelFacts:
    name: str
    path: str
    layers: int | None
    parameters: int
    weights_bytes: int


@dataclass(frozen=True)
class Measurement:
    """One model at one batch size: the raw repeat times and what they summarise to."""

    repeat_seconds: list[float]
    texts_per_s: float
    latency_median_ms: float
    latency_p90_ms: float
    peak_memory_bytes: int | None = None
    peak_rss_bytes: int | None = None


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
class BenchResult:
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------- baseline


def baseline_source(metadata: dict | None) -> str | None:
    """The full model an export came from, as written in its layerpick.json (a local path when it exists)."""
    if not metadata:
        return None
    source = metadata.get("source")
    if isinstance(source, dict):
        path, name = source.get("path"), source.get("model")
        if isinstance(path, str) and path and Path(path).is_dir():
            return path
        return name if isinstance(name, str) and name else None
    for key in ("source_model", "source", "base_model"):
        if isinstance(metadata.get(key), str) and metadata[key]:
            return metadata[key]
    return None


def full_model_dir(name: str) -> Path:
    """A local directory holding the full model's config.json and weights, for an alias, a directory
    (a plain transformers one or a sentence-transformers one), a .gguf file or a hub id."""
    from layerpick import registry
    from layerpick.gguf_cache import converted_gguf_dir

    if registry.get_entry(name) is not None:
        _, source = registry.resolve_alias(name)
        return converted_gguf_dir(source.directory, source.gguf_file) if source.gguf_file else source.directory
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return converted_gguf_dir(path.parent, path.name)
    if path.is_dir():
        return transformer_dir(path)
    if path.is_absolute() or name.startswith((".", "~")) or name.count("/") != 1:
        raise BenchError(f"baseline model not found: {name} (pass a registry alias, a directory or a hub id)")
    return _download(name)


def _download(repo_id: str) -> Path:
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, allow_patterns=["config.json", "*.safetensors", "*.json"]))
    except Exception as error:  # noqa: BLE001 - hub errors come in many types; one line for the user
        raise BenchError(f"cannot fetch baseline {repo_id}: {str(error).splitlines()[0]}") from error


def transformer_dir(directory: Path) -> Path:
    """Where the transformer's config.json and weights live: the directory itself, or for a
    sentence-transformers directory the path of its first module."""
    modules = directory / "modules.json"
    if modules.is_file():
        entries = json.loads(modules.read_text(encoding="utf-8"))
        first = min(entries, key=lambda entry: int(entry.get("idx", 0)))
        directory = directory / first.get("path", "")
    if not (directory / "config.json").is_file():
        raise BenchError(f"no config.json in {directory}: not a transformers model directory")
    return directory


def weight_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)


def build_baseline_dir(exported: Path, full: Path, work: Path) -> Path:
    """A copy of the exported directory whose transformer has the full model's config and weights
    (weights linked, not copied): same tokenizer, pooling and normalisation, all L layers."""
    target = work / "baseline"
    module = transformer_dir(exported).relative_to(exported)
    shutil.copytree(exported, target)
    module_dir = target / module
    for stale in weight_files(module_dir) + [module_dir / name for name in WEIGHT_INDEXES]:
        stale.unlink(missing_ok=True)
    shutil.copyfile(full / "config.json", module_dir / "config.json")
    weights = weight_files(full)
    if not weights:
        raise BenchError(f"no weight files in {full}")
    for weight in weights:
        (module_dir / weight.name).symlink_to(weight.resolve())
    for index in WEIGHT_INDEXES:
        if (full / index).is_file():
            shutil.copyfile(full / index, module_dir / index)
    (target / "layerpick.json").unlink(missing_ok=True)
    return target


# ---------------------------------------------------------------------------------------------- texts


def bench_texts(count: int, seed: int = 0) -> list[str]:
    """`count` natural sentences of mixed lengths from the embedded calibration set (cycled when more)."""
    pool = load_calibration(seed=seed).texts
    if count <= len(pool):
        return load_calibration(limit=count, seed=seed).texts
    return [pool[i % len(pool)] for i in range(count)]


def split_batches(texts: Sequence[str], batch_size: int) -> list[list[str]]:
    return [list(texts[i:i + batch_size]) for i in range(0, len(texts), batch_size)]


# ---------------------------------------------------------------------------------------------- timing


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def time_batch(model, batch: list[str], device: str) -> float:
    """Seconds of one `encode` call on `batch`."""
    _synchronize(device)
    start = time.perf_counter()
    model.encode(batch, batch_size=len(batch), convert_to_numpy=True, show_progress_bar=False)
    _synchronize(device)
    return time.perf_counter() - start


def summarise(passes: list[list[float]], batches: list[list[str]]) -> Measurement:
    """Throughput per pass (median over passes) and latency over the full-size batches of every pass."""
    count = sum(len(batch) for batch in batches)
    full = [i for i, batch in enumerate(batches) if len(batch) == len(batches[0])]
    latencies = np.array([seconds[i] for seconds in passes for i in full]) * 1000.0
    totals = [sum(seconds) for seconds in passes]
    return Measurement(
        repeat_seconds=[round(total, 6) for total in totals],
        texts_per_s=statistics.median(count / total for total in totals),
        latency_median_ms=float(np.percentile(latencies, 50)),
        latency_p90_ms=float(np.percentile(latencies, 90)),
    )


def time_side_by_side(models: dict[str, Any], batches: list[list[str]], repeats: int, device: str,
                      advance=lambda n=1: None) -> dict[str, Measurement]:
    """Time every model on the same batches, alternating them batch by batch (A B, B A, A B, ...), so that
    a change in the machine's load falls on both; `repeats` passes over all batches."""
    names = list(models)
    for name in names:  # warm-up: the first calls allocate memory and pick kernels
        time_batch(models[name], batches[0], device)
    passes = {name: [[0.0] * len(batches) for _ in range(repeats)] for name in names}
    step = 0
    for repeat in range(repeats):
        for index, batch in enumerate(batches):
            for name in names if step % 2 == 0 else reversed(names):
                passes[name][repeat][index] = time_batch(models[name], batch, device)
            step += 1
        advance(len(names))
    return {name: summarise(passes[name], batches) for name in names}


# ---------------------------------------------------------------------------------------------- memory


def measure_memory(directory: Path, texts: list[str], batch_sizes: Sequence[int], device: str) -> dict[int, dict]:
    """Peak memory of `directory`'s model at each batch size, in a fresh Python process:
    {batch size: {peak_memory_bytes, peak_rss_bytes, reset}}."""
    request = {"directory": str(directory), "texts": texts, "batch_sizes": sorted(batch_sizes), "device": device}
    command = [sys.executable, "-c", "from layerpick.bench import probe_main; probe_main()"]
    env = {**os.environ, "TQDM_DISABLE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    done = subprocess.run(command, input=json.dumps(request), capture_output=True, text=True, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"memory probe for {directory} failed: {last}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return {int(size): {**value, "reset": answer["reset"]} for size, value in answer["peaks"].items()}


def probe_main() -> None:
    """Subprocess entry: read a request on stdin, print {batch_size: {peak_memory_bytes, peak_rss_bytes}}."""
    request = json.load(sys.stdin)
    import torch

    from layerpick.models import resolve_device

    device = resolve_device(request["device"])
    _import_model_code(Path(request["directory"]))
    reset = _reset_peak_rss()
    before = _current_rss()
    model = load_sentence_transformer(request["directory"], device)
    loading_peak = _peak_rss()
    reset = reset and _reset_peak_rss()
    peaks = {}
    for size in request["batch_sizes"]:
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        for batch in split_batches(request["texts"], size):
            model.encode(batch, batch_size=size, convert_to_numpy=True, show_progress_bar=False)
        rss = max(loading_peak, _peak_rss())
        model_bytes = torch.cuda.max_memory_allocated() if device == "cuda" else rss - before
        peaks[size] = {"peak_memory_bytes": int(model_bytes), "peak_rss_bytes": int(rss)}
        reset = reset and _reset_peak_rss()
    print(json.dumps({"reset": reset, "peaks": peaks}))


def _import_model_code(directory: Path) -> None:
    """Import sentence-transformers and the architecture's transformers module before the baseline reading,
    so that what the probe attributes to the model is weights and activations, not Python code."""
    import sentence_transformers  # noqa: F401
    import transformers

    config = transformers.AutoConfig.from_pretrained(str(transformer_dir(directory)))
    try:
        transformers.MODEL_MAPPING[type(config)]
    except (KeyError, AttributeError):
        logger.debug("no AutoModel class found for %s", type(config).__name__)


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        return True
    except OSError:
        return False


def _peak_rss() -> int:
    """The process's peak RSS in bytes: VmHWM on Linux (getrusage's ru_maxrss there also counts the memory
    of the process this one was forked from, before exec), ru_maxrss elsewhere."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def _current_rss() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return _peak_rss()


def memory_method(device: str, reset: bool = True) -> str:
    if device == "cuda":
        return "torch.cuda.max_memory_allocated per batch size, fresh process per model"
    if reset:
        return ("peak RSS (loading or embedding at that batch size, whichever is larger) minus RSS before "
                "loading, after imports; a fresh process per model")
    return ("peak RSS minus RSS before loading, fresh process per model, batch sizes ascending; "
            "the peak mark could not be reset, so an import-time peak can hide the model's")


# ---------------------------------------------------------------------------------------------- the run


def run_bench(directory: str | Path, config: BenchConfig = BenchConfig(), *, progress: bool = False) -> BenchResult:
    """Measure the exported model in `directory` against its full model, side by side."""
    from layerpick.models import resolve_device
    from layerpick.progress import progress_bar

    config = config.validate()
    exported = Path(directory).expanduser()
    if not (exported / "modules.json").is_file():
        raise BenchError(f"not a sentence-transformers directory (no modules.json): {exported}")
    metadata = read_metadata(exported)
    name = config.baseline or baseline_source(metadata)
    if name is None:
        raise BenchError(f"{exported} has no layerpick.json naming its source model: pass --baseline MODEL")
    full, device, texts = full_model_dir(name), resolve_device(config.device), bench_texts(config.texts, config.seed)
    steps = len(config.batch_sizes) * config.repeats * 2
    with tempfile.TemporaryDirectory(prefix="layerpick-bench-") as work:
        paths = {"exported": exported, "baseline": build_baseline_dir(exported, full, Path(work))}
        models = {role: load_sentence_transformer(path, device) for role, path in paths.items()}
        facts = {"exported": _facts(str(exported), exported, models["exported"]),
                 "baseline": _facts(name, full, models["baseline"])}
        timings = {}
        with progress_bar("benchmarking", steps, enabled=progress) as advance:
            for size in config.batch_sizes:
                timings[size] = time_side_by_side(models, split_batches(texts, size), config.repeats, device, advance)
        del models
        memory = {role: measure_memory(path, texts, config.batch_sizes, device)
                  for role, path in paths.items()} if config.memory else None
    rows = [_row(size, timings[size], memory) for size in config.batch_sizes]
    return BenchResult(
        exported=facts["exported"], baseline=facts["baseline"], rows=rows,
        parameter_ratio=_ratio(facts["exported"].parameters, facts["baseline"].parameters),
        weights_ratio=_ratio(facts["exported"].weights_bytes, facts["baseline"].weights_bytes),
        texts=len(texts), repeats=config.repeats, device=device, threads=_threads(),
        memory_method=memory_method(device, _all_reset(memory)) if memory is not None else None,
        notes=_notes(name, config, metadata),
    )


def _facts(name: str, weights_dir: Path, model) -> ModelFacts:
    weights = weight_files(transformer_dir(weights_dir))
    inner = getattr(model[0], "auto_model", None)
    layers = getattr(getattr(inner, "config", None), "num_hidden_layers", None)
    return ModelFacts(name=name, path=str(weights_dir), layers=layers,
                      parameters=sum(p.numel() for p in model.parameters()),
                      weights_bytes=sum(path.stat().st_size for path in weights))


def _row(size: int, timing: dict[str, Measurement], memory: dict[str, dict[int, dict]] | None) -> BenchRow:
    exported, baseline = timing["exported"], timing["baseline"]
    if memory is not None:
        exported = _with_memory(exported, memory["exported"][size])
        baseline = _with_memory(baseline, memory["baseline"][size])
    return BenchRow(
        batch_size=size, exported=exported, baseline=baseline,
        throughput_ratio=_ratio(exported.texts_per_s, baseline.texts_per_s),
        latency_median_ratio=_ratio(exported.latency_median_ms, baseline.latency_median_ms),
        latency_p90_ratio=_ratio(exported.latency_p90_ms, baseline.latency_p90_ms),
        memory_ratio=_ratio(exported.peak_memory_bytes, baseline.peak_memory_bytes),
    )


def _with_memory(measurement: Measurement, peak: dict) -> Measurement:
    return Measurement(**{**asdict(measurement), "peak_memory_bytes": peak["peak_memory_bytes"],
                          "peak_rss_bytes": peak["peak_rss_bytes"]})


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return float(numerator) / float(denominator)


def _all_reset(memory: dict[str, dict[int, dict]]) -> bool:
    return all(peak["reset"] for peaks in memory.values() for peak in peaks.values())


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _notes(name: str, config: BenchConfig, metadata: dict | None) -> list[str]:
    origin = "--baseline" if config.baseline else "layerpick.json"
    notes = [f"baseline {name} (from {origin}): the export's tokenizer, pooling and normalisation with the full "
             f"model's weights"]
    source = (metadata or {}).get("source")
    if isinstance(source, dict):
        notes += [str(note) for note in source.get("notes") or []]
    return notes
