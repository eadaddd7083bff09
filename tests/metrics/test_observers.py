"""Tests for layerpick.metrics.token_observers: streaming per-text means."""

import pytest
import torch

from layerpick.metrics.curvature import curvature
from layerpick.metrics.entropy import prompt_entropy
from layerpick.metrics.token_observers import (
    CurvatureObserver,
    PromptEntropyObserver,
    TokenObserver,
)

NUM_LAYERS = 2
D = 5


def padded_batch(texts, length, left):
    """Pack per-text (T_i, D) tensors into (B, length, D) with garbage padding."""
    states = torch.full((len(texts), length, D), 1e6)
    mask = torch.zeros(len(texts), length, dtype=torch.bool)
    for row, (tokens, pad_left) in enumerate(zip(texts, left)):
        t = tokens.shape[0]
        span = slice(length - t, length) if pad_left else slice(0, t)
        states[row, span] = tokens
        mask[row, span] = True
    return states, mask


def make_texts(lengths, seed):
    gen = torch.Generator().manual_seed(seed)
    return [[torch.randn(t, D, generator=gen) for t in lengths] for _ in range(NUM_LAYERS + 1)]


def feed(observer, batches):
    """batches: list of (per-layer texts, left flags); observe every layer per batch."""
    for layers, left in batches:
        for layer, texts in enumerate(layers):
            states, mask = padded_batch(texts, 7, left)
            observer.observe(layer, states, mask)


def expected(batches, fn, min_tokens):
    out = []
    for layer in range(NUM_LAYERS + 1):
        values = [fn(t) for layers, _ in batches for t in layers[layer] if t.shape[0] >= min_tokens]
        out.append(sum(values) / len(values) if values else None)
    return out


BATCHES = [
    (make_texts([7, 4, 1, 2], seed=0), [False, True, True, False]),
    (make_texts([3, 6], seed=1), [True, False]),
]


def test_prompt_entropy_observer_matches_per_text_mean():
    observer = PromptEntropyObserver(NUM_LAYERS)
    feed(observer, BATCHES)
    result = observer.result()
    assert len(result) == NUM_LAYERS + 1
    # abs 1e-12: same float64 metric per text; only the summation order of the mean differs
    assert result == pytest.approx(expected(BATCHES, prompt_entropy, 2), abs=1e-12)
    assert observer.skipped == 1


def test_prompt_entropy_observer_alpha():
    observer = PromptEntropyObserver(NUM_LAYERS, alpha=2.0)
    feed(observer, BATCHES)
    ref = expected(BATCHES, lambda t: prompt_entropy(t, 2.0), 2)
    # abs 1e-12: same float64 metric per text; only the summation order of the mean differs
    assert observer.result() == pytest.approx(ref, abs=1e-12)


def test_curvature_observer_matches_per_text_mean():
    observer = CurvatureObserver(NUM_LAYERS)
    feed(observer, BATCHES)
    # abs 1e-12: same float64 metric per text; only the summation order of the mean differs
    assert observer.result() == pytest.approx(expected(BATCHES, curvature, 3), abs=1e-12)
    assert observer.skipped == 2


def test_none_when_no_text_qualifies():
    observer = CurvatureObserver(NUM_LAYERS)
    feed(observer, [(make_texts([1, 2], seed=2), [True, False])])
    assert observer.result() == [None] * (NUM_LAYERS + 1)
    assert observer.skipped == 2


def test_observers_satisfy_protocol():
    assert isinstance(PromptEntropyObserver(1), TokenObserver)
    assert isinstance(CurvatureObserver(1), TokenObserver)


def test_errors():
    observer = PromptEntropyObserver(NUM_LAYERS)
    states, mask = torch.zeros(2, 4, D), torch.ones(2, 4, dtype=torch.bool)
    with pytest.raises(ValueError):
        observer.observe(NUM_LAYERS + 1, states, mask)
    with pytest.raises(ValueError):
        observer.observe(0, states, mask[:, :3])
