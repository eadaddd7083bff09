"""Tests for layerpick.metrics.lidar against a SciPy generalized-eigen reference."""

import math

import numpy as np
import pytest
import scipy.linalg
import torch

from layerpick.metrics.lidar import lidar

EPS = 1e-12


def ref_lidar(views, delta):
    n, v, d = views.shape
    means = views.mean(axis=1)
    dev = means - means.mean(axis=0)
    s_b = sum(np.outer(r, r) for r in dev) / (n - 1)
    s_w = np.zeros((d, d))
    for i in range(n):
        for j in range(v):
            r = views[i, j] - means[i]
            s_w += np.outer(r, r)
    s_w = s_w / (n * (v - 1)) + delta * np.eye(d)
    eig = np.clip(scipy.linalg.eigh(s_b, s_w, eigvals_only=True), 0, None)
    p = eig / eig.sum() + EPS
    return float(-(p * np.log(p)).sum())


def make_views(n, v, d, noise, seed):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n, 1, d))
    return centres + noise * rng.standard_normal((n, v, d))


@pytest.mark.parametrize("shape", [(20, 4, 8), (5, 3, 32), (10, 2, 10)])
@pytest.mark.parametrize("delta", [1e-4, 1e-1])
def test_matches_scipy_reference(shape, delta):
    views = make_views(*shape, noise=0.3, seed=shape[0])
    expected = ref_lidar(views, delta)
    # abs 1e-7: float64 Cholesky whitening vs SciPy's generalised eigh; round-off, delta keeps S_w well-conditioned
    assert lidar(torch.from_numpy(views), delta) == pytest.approx(expected, abs=1e-7)


def test_bounded_by_log_of_rank():
    n, v, d = 6, 3, 40
    value = lidar(torch.from_numpy(make_views(n, v, d, 0.2, seed=1)))
    # 1e-6 above log(n - 1): float64 round-off and the 1e-12 EPS added to each p may nudge it up
    assert 0.0 <= value <= math.log(n - 1) + 1e-6


def test_identical_views_and_float32_ok():
    centres = np.random.default_rng(2).standard_normal((8, 1, 5))
    views = torch.from_numpy(np.repeat(centres, 3, axis=1))
    # abs 1e-7 (as above): identical views make S_w = delta * I in both, the rest is float64 round-off
    assert lidar(views) == pytest.approx(ref_lidar(views.numpy(), 1e-4), abs=1e-7)
    # abs 1e-3: loose; only checks float32 input is accepted (views rounded to float32, ~6e-8 rel)
    assert lidar(views.float()) == pytest.approx(lidar(views), abs=1e-3)


def test_single_shared_mean_gives_zero():
    views = torch.from_numpy(np.tile(make_views(1, 3, 4, 0.5, seed=3), (5, 1, 1)))
    assert lidar(views) == 0.0


def test_errors():
    with pytest.raises(ValueError):
        lidar(torch.zeros(5, 1, 3))
    with pytest.raises(ValueError):
        lidar(torch.zeros(1, 3, 3))
    with pytest.raises(ValueError):
        lidar(torch.zeros(5, 3))
    with pytest.raises(ValueError):
        lidar(torch.randn(5, 3, 2), delta=0.0)
