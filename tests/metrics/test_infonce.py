"""Tests for layerpick.metrics.infonce against an independent NumPy reference."""

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from layerpick.metrics.infonce import infonce


def ref_infonce(a, b, temperature):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    logits = a @ b.T / temperature
    diag = np.diag(logits)
    rows = np.mean(logsumexp(logits, axis=1) - diag)
    cols = np.mean(logsumexp(logits, axis=0) - diag)
    return float((rows + cols) / 2)


def rand(n, d, seed):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((n, d)))


@pytest.mark.parametrize("temperature", [0.05, 0.1, 1.0])
def test_matches_reference(temperature):
    a, b = rand(16, 10, 0), rand(16, 10, 1)
    b = a + 0.7 * b
    expected = ref_infonce(a.numpy(), b.numpy(), temperature)
    # abs 1e-10: float64 torch logsumexp vs SciPy's, round-off only
    assert infonce(a, b, temperature) == pytest.approx(expected, abs=1e-10)


def test_random_views_near_log_n():
    a, b = rand(64, 2048, 2), rand(64, 2048, 3)
    # abs 0.1: statistical, not rounding: random 2048-d views have cosines ~ +-0.02, shifting log(64) slightly
    assert infonce(a, b) == pytest.approx(math.log(64), abs=0.1)


def test_identical_views_small():
    a = rand(64, 2048, 4)
    assert infonce(a, a) < 0.01  # 0.01: at T 0.1, cosines ~ +-0.02 off the diagonal give log(1 + 63 e^-9.8) ~ 4e-3


def test_errors():
    with pytest.raises(ValueError):
        infonce(rand(4, 3, 0), rand(5, 3, 1))
    with pytest.raises(ValueError):
        infonce(rand(1, 3, 0), rand(1, 3, 1))
    with pytest.raises(ValueError):
        infonce(rand(4, 3, 0), rand(4, 3, 1), temperature=0.0)
