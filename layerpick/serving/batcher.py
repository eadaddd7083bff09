"""The batching worker of `layerpick serve`: the one thread that touches the model.

Owns: the queue of submitted requests, merging whole requests into batches (up to `batch_size` texts, waiting
at most `max_wait_s` for more after the first; a request that does not fit is carried to the next batch),
running one batch function per batch, handing each request its slice of the result, isolating a failed
batch (each of its requests is run again alone, so only a request that fails alone gets an error, never the
others batched with it), finishing queued work on close, and counting what it did (`BatchStats`).
Model-agnostic: it calls `run_batch(texts) -> (vectors (n, D), token counts)`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

logger = logging.getLogger(__name__)

# Embed a batch of texts: (vectors (n, D), tokens each text fed the model).
BatchFn = Callable[[list[str]], tuple[np.ndarray, list[int]]]


@dataclass
class BatchStats:
    """What the worker did: batches run and requests answered, how many batches merged several requests, how
    many batches failed and were split into one run per request, and how many requests failed alone."""

    batches: int = 0
    requests: int = 0
    texts: int = 0
    max_requests_per_batch: int = 0
    multi_request_batches: int = 0
    split_batches: int = 0
    failed_requests: int = 0


@dataclass
class _Job:
    texts: list[str]
    future: Future = field(default_factory=Future)


_STOP = object()


class BatcherClosed(RuntimeError):
    """The worker has stopped; no more work is accepted."""


class Batcher:
    """A single worker thread that owns the model and runs queued requests in batches."""

    def __init__(self, run_batch: BatchFn, batch_size: int, max_wait_s: float):
        self._run_batch, self._batch_size, self._max_wait_s = run_batch, batch_size, max_wait_s
        self._queue: queue.Queue = queue.Queue()
        self._carry: _Job | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._refusing = False  # set by `refuse_queued`: queued and new work is answered BatcherClosed
        self.longest_batch_s = 0.0  # the longest batch so far (how long the drain keeps for the last one)
        self._stats = BatchStats()
        self._thread = threading.Thread(target=self._loop, name="layerpick-embed-worker", daemon=True)
        self._thread.start()

    def submit(self, texts: list[str]) -> Future:
        """Queue texts; the future resolves to (vectors (n, D), token counts) for them."""
        job = _Job(texts)
        with self._lock:
            if self._closed or self._refusing:
                raise BatcherClosed("the embedding worker has stopped")
            self._queue.put(job)
        return job.future

    def refuse_queued(self) -> None:
        """Answer every queued request, and every later one, BatcherClosed; the batch running now finishes (a
        draining server's requests that cannot finish before its deadline get a clean refusal, not a cut)."""
        with self._lock:
            self._refusing = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is _STOP:
                self._queue.put(_STOP)
                return
            item.future.set_exception(BatcherClosed("the server is shutting down"))

    def close(self) -> None:
        """Finish everything queued, then stop the worker."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
        self._thread.join()

    def stats(self) -> dict:
        with self._lock:
            return asdict(self._stats)

    def _loop(self) -> None:
        while True:
            jobs, stop = self._collect()
            if jobs and self._refusing:  # collected before the refusal: refused like the rest of the queue
                for job in jobs:
                    job.future.set_exception(BatcherClosed("the server is shutting down"))
            elif jobs:
                started = time.monotonic()
                self._run(jobs)
                self.longest_batch_s = max(self.longest_batch_s, time.monotonic() - started)
            if stop:
                return

    def _collect(self) -> tuple[list[_Job], bool]:
        first = self._carry if self._carry is not None else self._queue.get()
        self._carry = None
        if first is _STOP:
            return [], True
        jobs, count = [first], len(first.texts)
        deadline = time.monotonic() + self._max_wait_s
        while count < self._batch_size:
            try:
                item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if item is _STOP:
                return jobs, True
            if count + len(item.texts) > self._batch_size:
                self._carry = item
                break
            jobs.append(item)
            count += len(item.texts)
        return jobs, False

    def _run(self, jobs: list[_Job]) -> None:
        """One batch for `jobs`; if it fails, each job alone, so one request's failure is only its own."""
        texts = [text for job in jobs for text in job.texts]
        try:
            vectors, tokens = self._run_batch(texts)
        except Exception as error:  # noqa: BLE001 - isolated below, or reported to its one request
            if len(jobs) == 1:
                self._fail(jobs[0], error)
            else:
                self._split(jobs, error)
            return
        self._record(len(jobs), len(texts))
        _hand_out(jobs, vectors, tokens)

    def _split(self, jobs: list[_Job], error: Exception) -> None:
        logger.warning("a batch of %d requests failed (%r); running each request alone", len(jobs), error)
        with self._lock:
            self._stats.split_batches += 1
        for job in jobs:
            self._run([job])

    def _fail(self, job: _Job, error: Exception) -> None:
        logger.error("embedding a request of %d texts failed", len(job.texts), exc_info=error)
        with self._lock:
            self._stats.failed_requests += 1
        job.future.set_exception(error)

    def _record(self, requests: int, texts: int) -> None:
        with self._lock:
            stats = self._stats
            stats.batches += 1
            stats.requests += requests
            stats.texts += texts
            stats.max_requests_per_batch = max(stats.max_requests_per_batch, requests)
            stats.multi_request_batches += requests > 1


def _hand_out(jobs: list[_Job], vectors: np.ndarray, tokens: list[int]) -> None:
    """Each job its slice of the batch's result, in the order its texts were merged."""
    start = 0
    for job in jobs:
        end = start + len(job.texts)
        job.future.set_result((vectors[start:end], tokens[start:end]))
        start = end


def make_batch_fn(model, batch_size: int) -> BatchFn:
    """Embed texts with `model.encode` and count the tokens each one fed the model (after truncation)."""

    def run(texts: list[str]) -> tuple[np.ndarray, list[int]]:
        features = model.preprocess(texts)
        mask = features.get("attention_mask")
        tokens = [int(n) for n in mask.sum(dim=1).tolist()] if mask is not None else [0] * len(texts)
        vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32), tokens

    return run
