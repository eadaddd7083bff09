"""Tests for layerpick.metrics.entropy against an independent NumPy reference."""

import math

import numpy as np
import pytest
import torch

from layerpick.metrics.entropy import (
    dataset_entropy,
    matrix_entropy,
    normalized_entropy,
    prompt_entropy,
)


def ref_spectral_entropy(eig, alpha):
    # numerical-rank cut: eigenvalues at round-off level count as zero
    p = np.where(eig > len(eig) * np.finfo(float).eps * np.abs(eig).max(), eig, 0.0)
    p = p / p.sum()
    if alpha == 1:
        p = p[p > 0]
        return float(-(p * np.log(p)).sum())
    return float(np.log((p**alpha).sum()) / (1 - alpha))


def ref_rows(x):
    x = np.asarray(x, dtype=np.float64)
    c = x - x.mean(axis=0)
    norms = np.linalg.norm(c, axis=1, keepdims=True)
    return c / np.where(norms > 0, norms, 1.0)


def ref_normalized_entropy(x, alpha):
    rows = ref_rows(x)
    cov = rows.T @ rows  # always the d x d path
    eig = np.linalg.eigvalsh(cov)
    return ref_spectral_entropy(eig, alpha) / math.log(min(x.shape))


def rand(n, d, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((n, d)))


@pytest.mark.parametrize("alpha", [1.0, 2.0, 0.5, 3.0])
@pytest.mark.parametrize("shape", [(12, 40), (40, 12), (16, 16)])
def test_normalized_entropy_matches_reference(shape, alpha):
    x = rand(*shape, seed=shape[0])
    expected = ref_normalized_entropy(x.numpy(), alpha)
    # abs 1e-9: float64 torch vs NumPy eigvalsh; alpha < 1 amplifies round-off of small eigenvalues
    assert normalized_entropy(x, alpha) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("alpha", [1.0, 2.0, 0.5, 3.0])
def test_matrix_entropy_matches_reference(alpha):
    a = rand(10, 6, seed=3).numpy()
    gram = a @ a.T
    expected = ref_spectral_entropy(np.linalg.eigvalsh(gram / np.trace(gram)), alpha)
    # abs 1e-10: float64 torch vs NumPy eigvalsh of the same trace-normalised gram
    assert matrix_entropy(torch.from_numpy(gram), alpha) == pytest.approx(expected, abs=1e-10)


def test_alpha_two_frobenius_equals_eigen_formula():
    a = rand(15, 9, seed=4).numpy()
    gram = a @ a.T
    eig = np.linalg.eigvalsh(gram / np.trace(gram))
    expected = -math.log(float((eig**2).sum()))
    # abs 1e-10: alpha 2 via the Frobenius norm vs NumPy's eigenvalues, float64 round-off
    assert matrix_entropy(torch.from_numpy(gram), 2.0) == pytest.approx(expected, abs=1e-10)


def test_matrix_entropy_is_trace_normalised():
    gram = torch.from_numpy(np.diag([1.0, 1.0, 1.0, 1.0]))
    # default rel 1e-6: eigenvalues are exactly 1/4; only the float64 repr of log(4) is absorbed
    assert matrix_entropy(gram) == pytest.approx(math.log(4))
    # default rel 1e-6: the factor 7.5 cancels in the trace normalisation; log(4) repr only
    assert matrix_entropy(7.5 * gram) == pytest.approx(math.log(4))


@pytest.mark.parametrize("shape", [(8, 30), (30, 8)])
def test_both_gram_paths_agree(shape):
    rows = torch.from_numpy(ref_rows(rand(*shape, seed=5).numpy()))
    small, large = rows @ rows.T, rows.T @ rows
    for alpha in (1.0, 2.0, 0.5):
        # abs 1e-9: same nonzero spectrum; the larger gram's extra eigenvalues are float64 round-off, cut
        assert matrix_entropy(small, alpha) == pytest.approx(matrix_entropy(large, alpha), abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_normalized_entropy_in_unit_interval(seed):
    rng = np.random.default_rng(seed)
    low_rank = rng.standard_normal((20, 2)) @ rng.standard_normal((2, 30))
    for x in (rand(20, 30, seed), rand(30, 5, seed), torch.from_numpy(low_rank)):
        for alpha in (0.5, 1.0, 2.0, 4.0):
            assert 0.0 <= normalized_entropy(x, alpha) <= 1.0


def test_invariant_to_rotation_and_scaling():
    x = rand(25, 10, seed=6)
    q, _ = np.linalg.qr(np.random.default_rng(7).standard_normal((10, 10)))
    base = normalized_entropy(x)
    # abs 1e-10: invariance under rotation and scale, up to float64 round-off of the product
    assert normalized_entropy(x @ torch.from_numpy(q)) == pytest.approx(base, abs=1e-10)
    # abs 1e-10 (as above): scale cancels in the centring and unit-norm step
    assert normalized_entropy(3.7 * x) == pytest.approx(base, abs=1e-10)


def test_isotropic_data_is_maximal():
    eye = torch.eye(6, dtype=torch.float64)
    # abs 1e-12: +-e_i rows give equal eigenvalues exactly; eigensolver round-off only
    assert normalized_entropy(torch.cat([eye, -eye])) == pytest.approx(1.0, abs=1e-12)
    # 0.99: statistical: 4000 Gaussian rows in 8-d are isotropic up to sampling noise ~1e-3
    assert normalized_entropy(rand(4000, 8, seed=8)) > 0.99


def test_rank_one_centred_data_is_minimal():
    rng = np.random.default_rng(9)
    u = rng.standard_normal(12)
    offset = rng.standard_normal(12)
    a = rng.uniform(-3, 3, size=20)
    x = torch.from_numpy(offset + a[:, None] * u)
    # abs 1e-8: rank one; eigenvalues at round-off level (~1e-16) contribute < 1e-13 after the rank cut
    assert normalized_entropy(x) == pytest.approx(0.0, abs=1e-8)
    assert normalized_entropy(x, 2.0) == pytest.approx(0.0, abs=1e-8)  # abs 1e-8 (as above), alpha 2


def test_identical_rows_give_zero():
    x = torch.full((5, 7), 0.1, dtype=torch.float32)
    assert normalized_entropy(x) == 0.0


def test_prompt_and_dataset_entropy_are_normalized_entropy():
    x = rand(9, 14, seed=10)
    assert prompt_entropy(x) == normalized_entropy(x)
    assert dataset_entropy(x, 2.0) == normalized_entropy(x, 2.0)


def test_float32_input_is_accepted():
    x = rand(12, 20, seed=11)
    # abs 1e-5: input rounded to float32 (~6e-8 rel) before the float64 computation
    assert normalized_entropy(x.float()) == pytest.approx(normalized_entropy(x), abs=1e-5)


def test_errors():
    with pytest.raises(ValueError):
        normalized_entropy(rand(1, 5))
    with pytest.raises(ValueError):
        normalized_entropy(torch.ones(5))
    with pytest.raises(ValueError):
        matrix_entropy(torch.ones(2, 3))
    with pytest.raises(ValueError):
        matrix_entropy(torch.zeros(3, 3))
    with pytest.raises(ValueError):
        matrix_entropy(torch.eye(3), alpha=0.0)
