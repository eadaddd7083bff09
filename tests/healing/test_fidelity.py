"""The label-free fidelity measures on vectors whose answer is known by construction."""

from __future__ import annotations

import pytest
import torch

from layerpick.healing.fidelity import fidelity, knn_overlap, mean_cosine, neighbours


def vectors(n=30, d=8, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed))


def test_an_encoder_is_fully_faithful_to_itself():
    a = vectors()
    result = fidelity(a, a)
    # default rel 1e-6: cosine of a vector with itself, computed in float64; round-off only
    assert result.cosine == pytest.approx(1.0) and result.knn_overlap == 1.0 and result.k == 10 and result.texts == 30


def test_a_rotation_keeps_the_neighbours_but_not_the_cosine():
    a = vectors()
    rotation, _ = torch.linalg.qr(torch.randn(8, 8, generator=torch.Generator().manual_seed(1)))
    result = fidelity(a @ rotation, a)
    # 0.9: a random rotation of 8-d vectors drops the mean cosine far below 1
    assert result.knn_overlap == 1.0 and result.cosine < 0.9


def test_a_scaled_copy_is_faithful():
    a = vectors()
    # default rel 1e-6: scaling by 3 cancels in the float64 cosine up to round-off
    assert mean_cosine(3 * a, a) == pytest.approx(1.0) and knn_overlap(3 * a, a, 5) == 1.0


def test_unrelated_vectors_share_few_neighbours():
    # 0.2: unrelated random vectors share ~10 / 199 of their 10 neighbours by chance
    assert knn_overlap(vectors(200, 16, 0), vectors(200, 16, 1), 10) < 0.2


def test_neighbours_by_hand():
    points = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    assert neighbours(points, 1).flatten().tolist() == [1, 0, 3, 2]
    swapped = points[:, [1, 0]]  # the same pairs: 0-1 and 2-3 stay each other's nearest
    assert knn_overlap(points, swapped, 1) == 1.0
    # default rel 1e-6: exact ratio 1/2 of counts; approx absorbs only its float repr
    assert knn_overlap(points, points[[1, 0, 3, 2]], 2) == pytest.approx(0.5)


def test_k_is_capped_by_the_texts():
    a = vectors(5)
    assert fidelity(a, a).k == 4


def test_different_widths_give_neighbours_only():
    a = vectors()
    result = fidelity(a, torch.cat([a, a], dim=1))
    assert result.knn_overlap == 1.0 and result.cosine != result.cosine  # NaN: no cosine across widths


def test_mismatched_texts_are_refused():
    with pytest.raises(ValueError):
        fidelity(vectors(5), vectors(6))
