"""Timing two (or more) models side by side on the same batches, for `layerpick bench`.

Owns: splitting texts into batches, timing one `encode` call (synchronising CUDA around it), the
interleaved schedule, and `Measurement` with its summary.

Both models are loaded in one process and timed on the same batches, alternating batch by batch
(A B, B A, A B, ...), so that drift and bursts of other load fall on both. Throughput is texts per second of
one pass over all texts (median over repeats); latency is per `encode` call of one full batch.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class Measurement:
    """One model at one batch size: the raw repeat times and what they summarise to."""

    repeat_seconds: list[float]
    texts_per_s: float
    latency_median_ms: float
    latency_p90_ms: float
    peak_memory_bytes: int | None = None
    peak_rss_bytes: int | None = None


def split_batches(texts: Sequence[str], batch_size: int) -> list[list[str]]:
    return [list(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]


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


def time_side_by_side(
    models: dict[str, Any], batches: list[list[str]], repeats: int, device: str, advance=lambda n=1: None
) -> dict[str, Measurement]:
    """Time every model on the same batches, rotating their order batch by batch (A B C, B C A, C A B, ...;
    with two models A B, B A), so that a change in the machine's load falls on all of them; `repeats` passes
    over all batches. The rotation also keeps the order fair for three or more models: none runs right after
    itself, which at small batches would find its weights still in the CPU caches (a plain A B C, C B A
    alternation gives that advantage to the first and last models only)."""
    names = list(models)
    for name in names:  # warm-up: the first calls allocate memory and pick kernels
        time_batch(models[name], batches[0], device)
    passes = {name: [[0.0] * len(batches) for _ in range(repeats)] for name in names}
    step = 0
    for repeat in range(repeats):
        for index, batch in enumerate(batches):
            for name in names[step % len(names) :] + names[: step % len(names)]:
                passes[name][repeat][index] = time_batch(models[name], batch, device)
            step += 1
        advance(len(names))
    return {name: summarise(passes[name], batches) for name in names}
