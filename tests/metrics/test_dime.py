"""Tests for layerpick.metrics.dime against an independent NumPy reference."""

import numpy as np
import pytest
import torch

from layerpick.metrics.dime import dime


def ref_entropy(k):
    eig = np.clip(np.linalg.eigvalsh(k / np.trace(k)), 0, None)
    eig = eig[eig > 0]
    return float(-(eig * np.log(eig)).sum())


def ref_dime(a, b, perms):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    ka, kb = a @ a.T, b @ b.T
    shuffled = [ref_entropy(ka * kb[np.ix_(p, p)]) for p in perms]
    return float(np.mean(shuffled)) - ref_entropy(ka * kb)


def torch_perms(n, count, seed):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randperm(n, generator=gen).numpy() for _ in range(count)]


def rand(n, d, seed):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((n, d)))


def test_matches_reference():
    a, b = rand(30, 6, 0), rand(30, 6, 1)
    b = a + 0.5 * b
    expected = ref_dime(a.numpy(), b.numpy(), torch_perms(30, 7, seed=3))
    # abs 1e-10: float64 torch vs float64 NumPy eigvalsh; they differ only by round-off (~1e-13)
    assert dime(a, b, permutations=7, seed=3) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_independent_views_near_zero_identical_views_large(seed):
    a, b = rand(64, 8, 2 * seed), rand(64, 8, 2 * seed + 1)
    # 0.1: statistical, not rounding: independent 64 x 8 views give a DiME near 0 up to sampling noise
    assert abs(dime(a, b)) < 0.1
    assert dime(a, a) > 0.3  # 0.3: identical views sit far above the noise of independent ones (|DiME| < 0.1 above)


def test_deterministic_for_seed():
    a, b = rand(20, 5, 4), rand(20, 5, 5)
    assert dime(a, b, seed=1) == dime(a, b, seed=1)
    assert dime(a, b, seed=1) != dime(a, b, seed=2)


def test_invariant_to_row_scaling():
    a, b = rand(20, 5, 6), rand(20, 5, 7)
    scales = torch.from_numpy(np.random.default_rng(8).uniform(0.5, 4.0, size=(20, 1)))
    # abs 1e-10: row scaling cancels in the unit-norm step, exactly up to float64 round-off
    assert dime(a * scales, b) == pytest.approx(dime(a, b), abs=1e-10)


def test_errors():
    with pytest.raises(ValueError):
        dime(rand(5, 3, 0), rand(6, 3, 1))
    with pytest.raises(ValueError):
        dime(rand(1, 3, 0), rand(1, 3, 1))
    with pytest.raises(ValueError):
        dime(rand(5, 3, 0), rand(5, 3, 1), permutations=0)
