"""Peak memory of a sentence-transformers model at given batch sizes, measured in a fresh Python process.

Owns: starting the probe subprocess and reading its answer (`measure_memory`), the probe itself
(`probe_main`), the process's RSS readings, and the sentence that says how memory was measured.

- At each batch size the probe embeds one batch: the `size` longest texts (by token count), which have the
  largest padded shape, hence the largest activations, that any batch of that size drawn from the texts can
  have. Embedding every text in batches would find the same peak at many times the cost.
- On CPU: peak RSS (Linux VmHWM) minus the RSS before the model is loaded (torch, sentence-transformers and
  the architecture's code already imported); the peak at a batch size is the larger of the loading peak and
  the peak while embedding that batch (the kernel's peak mark is reset after loading and between batch
  sizes).
- On CUDA: `torch.cuda.max_memory_allocated`, reset before each batch size (the weights stay allocated, so
  included).
- The probe uses the thread count it is given (`--threads`), so that per-thread buffers match the timing.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from layerpick.benchmark.baseline import transformer_dir
from layerpick.benchmark.config import BenchError
from layerpick.exporting.load import load_encoder

logger = logging.getLogger(__name__)

PROBE_CODE = "from layerpick.benchmark.memory import probe_main; probe_main()"


def measure_memory(
    directory: Path,
    texts: list[str],
    batch_sizes: Sequence[int],
    device: str,
    threads: int | None = None,
    backend: str = "torch",
) -> dict[int, dict]:
    """Peak memory of `directory`'s model (run by `backend`) at each batch size, in a fresh Python process:
    {batch size: {peak_memory_bytes, peak_rss_bytes, reset, threads}}."""
    request = {
        "directory": str(directory),
        "texts": texts,
        "batch_sizes": sorted(batch_sizes),
        "device": device,
        "threads": threads,
        "backend": backend,
    }
    env = {**os.environ, "TQDM_DISABLE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE_CODE], input=json.dumps(request), capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"memory probe for {directory} failed: {last}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        int(size): {**value, "reset": answer["reset"], "threads": answer["threads"]}
        for size, value in answer["peaks"].items()
    }


def probe_main() -> None:
    """Subprocess entry: read a request on stdin, print {reset, threads, peaks: {batch size: {peak_memory_bytes,
    peak_rss_bytes}}} as one JSON line."""
    request = json.load(sys.stdin)
    import torch

    from layerpick.core.devices import resolve_device

    device = resolve_device(request["device"])
    if request.get("threads"):
        torch.set_num_threads(int(request["threads"]))
    backend = request.get("backend", "torch")
    _import_model_code(Path(request["directory"]), backend)
    reset = _reset_peak_rss()
    before = _current_rss()
    model = load_encoder(request["directory"], device, backend)
    loading_peak = _peak_rss()
    reset = reset and _reset_peak_rss()
    peaks = {}
    for size in request["batch_sizes"]:
        peaks[size] = _peak_at(model, request["texts"], size, device, loading_peak, before)
        reset = reset and _reset_peak_rss()
    print(json.dumps({"reset": reset, "threads": torch.get_num_threads(), "peaks": peaks}))


def _peak_at(model, texts: list[str], size: int, device: str, loading_peak: int, before: int) -> dict:
    """Embed the worst batch of `size` texts; the peak since the last reset (or since loading, if larger)."""
    import torch

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    batch = longest(texts, size, _token_count(model))
    model.encode(batch, batch_size=size, convert_to_numpy=True, show_progress_bar=False)
    rss = max(loading_peak, _peak_rss())
    model_bytes = torch.cuda.max_memory_allocated() if device == "cuda" else rss - before
    return {"peak_memory_bytes": int(model_bytes), "peak_rss_bytes": int(rss)}


def longest(texts: list[str], size: int, length) -> list[str]:
    """The `size` texts with the largest `length` (all of them when there are fewer)."""
    return sorted(texts, key=length, reverse=True)[:size]


def _token_count(model):
    """Tokens of one text as `model` sees it (truncated to its max_seq_length)."""
    limit = getattr(model, "max_seq_length", None)
    tokenizer = getattr(model, "tokenizer", None)
    if hasattr(tokenizer, "encode_batch"):  # a static export's Rust tokenizer: no limit, no special tokens
        return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)
    options = {"truncation": True, "max_length": limit} if limit else {}
    return lambda text: len(model.tokenizer(text, **options)["input_ids"])


def _import_model_code(directory: Path, backend: str = "torch") -> None:
    """Import sentence-transformers and the architecture's transformers module (and onnxruntime for an ONNX
    backend) before the baseline reading, so that what the probe attributes to the model is weights and
    activations, not Python code."""
    import sentence_transformers  # noqa: F401
    import transformers

    if backend != "torch":
        import onnxruntime  # noqa: F401

    if _is_static(directory):
        return  # a table: no architecture code to import
    config = transformers.AutoConfig.from_pretrained(str(transformer_dir(directory)))
    try:
        transformers.MODEL_MAPPING[type(config)]
    except (KeyError, AttributeError):
        logger.debug("no AutoModel class found for %s", type(config).__name__)


def _is_static(directory: Path) -> bool:
    """Whether the directory's first module is a StaticEmbedding (a static export: no transformer)."""
    try:
        modules = json.loads((Path(directory) / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(str(entry.get("type", "")).endswith("StaticEmbedding") for entry in modules)


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


def all_reset(memory: dict[str, dict[int, dict]]) -> bool:
    """Whether every probe could reset the kernel's peak mark (so each batch size's peak is its own)."""
    return all(peak["reset"] for peaks in memory.values() for peak in peaks.values())


def memory_method(device: str, reset: bool = True) -> str:
    if device == "cuda":
        return "torch.cuda.max_memory_allocated per batch size, fresh process per model"
    if reset:
        return (
            "peak RSS (loading or embedding at that batch size, whichever is larger) minus RSS before "
            "loading, after imports; a fresh process per model"
        )
    return (
        "peak RSS minus RSS before loading, fresh process per model, batch sizes ascending; "
        "the peak mark could not be reset, so an import-time peak can hide the model's"
    )
