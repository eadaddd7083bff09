"""Tests for layerpick.metrics.curvature against an independent NumPy reference."""

import math

import numpy as np
import pytest
import torch

from layerpick.metrics.curvature import curvature


def ref_curvature(x):
    angles = []
    for t in range(len(x) - 2):
        v1, v2 = x[t + 1] - x[t], x[t + 2] - x[t + 1]
        cos = v1 @ v2 / (np.linalg.norm(v1) * np.linalg.norm(v2))
        angles.append(math.acos(min(1.0, max(-1.0, cos))))
    return float(np.mean(angles))


@pytest.mark.parametrize("shape", [(3, 2), (10, 5), (40, 64)])
def test_matches_reference(shape):
    x = np.random.default_rng(shape[0]).standard_normal(shape)
    # abs 1e-10: float64 torch vs float64 NumPy reference; arccos round-off only
    assert curvature(torch.from_numpy(x)) == pytest.approx(ref_curvature(x), abs=1e-10)


def test_straight_line_is_zero():
    rng = np.random.default_rng(1)
    start, direction = rng.standard_normal(16), rng.standard_normal(16)
    even = start + np.arange(12)[:, None] * direction
    uneven = start + np.cumsum(rng.uniform(0.1, 3.0, 12))[:, None] * direction
    # abs 1e-6: cos of collinear float64 steps is 1 - ~1e-16, and arccos(1 - e) ~ sqrt(2e) ~ 1e-8
    assert curvature(torch.from_numpy(even)) == pytest.approx(0.0, abs=1e-6)
    # abs 1e-6 (as above): uneven steps along one line are still collinear
    assert curvature(torch.from_numpy(uneven)) == pytest.approx(0.0, abs=1e-6)


def test_known_angles():
    right = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    back = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    # default rel 1e-6: exact small inputs, the angles are pi/2 and pi up to float64 round-off
    assert curvature(right) == pytest.approx(math.pi / 2)
    # default rel 1e-6 (as above): a turn back is pi up to float64 round-off
    assert curvature(back) == pytest.approx(math.pi)


def test_zero_steps_are_left_out():
    stall = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [2.0, 0.0], [2.0, 1.0]])
    # default rel 1e-6: exact inputs; only the float64 repr of pi/2 is absorbed
    assert curvature(stall) == pytest.approx(math.pi / 2)
    assert curvature(torch.ones(4, 3)) == 0.0


def test_invariant_to_rotation_scale_translation():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((9, 6))
    q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    moved = 2.5 * x @ q + rng.standard_normal(6)
    # abs 1e-10: rotation, scale and shift leave angles unchanged up to float64 matmul round-off
    assert curvature(torch.from_numpy(moved)) == pytest.approx(ref_curvature(x), abs=1e-10)


def test_errors():
    with pytest.raises(ValueError):
        curvature(torch.zeros(2, 4))
    with pytest.raises(ValueError):
        curvature(torch.zeros(5))
