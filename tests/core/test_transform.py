"""Post-pooling transforms (`core.transform`): properties of each fitted map, determinism, numerical safety,
and the one-line errors of names and sizes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from layerpick.core.transform import (
    IDENTITY,
    TransformError,
    TransformSpec,
    fit,
    fit_layers,
    fit_set_of,
    parse_transform,
    parse_transforms,
    supported_dim,
    transform_from_json,
)


def anisotropic(n: int = 200, d: int = 16, seed: int = 0) -> np.ndarray:
    """Vectors with a large common offset and one dominant direction, like a decoder's shallow layers."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * np.linspace(5.0, 0.1, d)
    return x + 40.0


def test_center_removes_the_fit_mean_and_keeps_differences():
    x = anisotropic()
    affine = fit(TransformSpec("center"), x)
    y = affine.apply(x)
    # atol 1e-9: float64 centring of values ~40; round-off ~1e-14, with margin
    assert np.allclose(y.mean(axis=0), 0.0, atol=1e-9)
    # allclose defaults (rtol 1e-5, atol 1e-8): centring leaves differences exact up to float64 round-off
    assert np.allclose(y[1] - y[0], x[1] - x[0])


@pytest.mark.parametrize("dim", [4, 16])
def test_whitening_gives_unit_covariance_on_the_fit_set(dim):
    x = anisotropic()
    y = fit(TransformSpec("whiten", dim), x).apply(x)
    assert y.shape == (200, dim)
    # atol 1e-9: float64 mean of whitened values ~1; round-off ~1e-15, with margin
    assert np.allclose(y.mean(axis=0), 0.0, atol=1e-9)
    # atol 1e-8: float64 round-off amplified by the covariance's condition ((5 / 0.1)^2 = 2500)
    assert np.allclose(np.cov(y, rowvar=False), np.eye(dim), atol=1e-8)


def test_whitening_keeps_the_top_principal_directions():
    """The kept directions are the largest-variance ones: the variance lost is the smallest eigenvalues'."""
    x = anisotropic()
    affine = fit(TransformSpec("whiten", 3), x)
    eigenvalues, vectors = np.linalg.eigh(np.cov(x, rowvar=False))
    top = vectors[:, np.argsort(eigenvalues)[::-1][:3]]
    rows = affine.weight / np.linalg.norm(affine.weight, axis=1, keepdims=True)
    # atol 1e-6: fit's PCA vs eigh here, float64; eigenvector round-off ~ eps / eigen-gap, far below
    assert np.allclose(np.abs(rows @ top), np.eye(3), atol=1e-6)


def test_abtt_removes_the_mean_and_the_top_directions():
    x = anisotropic()
    affine = fit(TransformSpec("abtt", 2), x)
    y = affine.apply(x)
    assert y.shape == x.shape
    assert np.allclose(y.mean(axis=0), 0.0, atol=1e-9)  # atol 1e-9: float64 centring, as above
    eigenvalues, vectors = np.linalg.eigh(np.cov(x, rowvar=False))
    top = vectors[:, np.argsort(eigenvalues)[::-1][:2]]
    # 1e-8: float64 projection of values ~40 on removed directions; round-off ~1e-13
    assert np.abs(y @ top).max() < 1e-8  # nothing left along the removed directions
    rest = vectors[:, np.argsort(eigenvalues)[::-1][2:]]
    # allclose defaults (rtol 1e-5, atol 1e-8): float64 projections, round-off only
    assert np.allclose((x - x.mean(axis=0)) @ rest, y @ rest)  # everything else kept


def test_the_same_texts_give_the_same_map_and_signs_are_fixed():
    x = anisotropic()
    first, second = fit(TransformSpec("whiten", 8), x), fit(TransformSpec("whiten", 8), x.copy())
    assert np.array_equal(first.weight, second.weight) and np.array_equal(first.bias, second.bias)
    flipped = fit(TransformSpec("whiten", 8), x[::-1].copy())  # another row order: same subspace and signs
    # atol 1e-8: the same float64 fit on reordered rows; summation order only
    assert np.allclose(first.weight, flipped.weight, atol=1e-8)
    largest = np.argmax(np.abs(first.weight), axis=1)
    assert (first.weight[np.arange(8), largest] > 0).all()


def test_degenerate_fit_states_stay_finite():
    """Duplicated texts and a constant dimension: the eigenvalue floor keeps the map finite."""
    x = np.repeat(anisotropic(10, 8), 5, axis=0)
    x[:, 3] = 7.0
    affine = fit(TransformSpec("whiten"), x)
    assert affine.out_dim == supported_dim(50, 8)
    assert np.isfinite(affine.weight).all() and np.isfinite(affine.apply(x)).all()


def test_whiten_without_a_size_keeps_what_the_fit_set_supports():
    assert fit(TransformSpec("whiten"), anisotropic(10, 16)).out_dim == 9  # N - 1 < D
    assert fit(TransformSpec("whiten"), anisotropic(200, 16)).out_dim == 16


def test_the_map_is_float64_and_matches_torch():
    x = anisotropic()
    affine = fit(TransformSpec("whiten", 8), torch.tensor(x, dtype=torch.float32))
    assert affine.weight.dtype == np.float64
    got = affine.apply_torch(torch.tensor(x)).numpy()
    # allclose defaults (rtol 1e-5, atol 1e-8): both are float64 x @ W.T + b, round-off only
    assert np.allclose(got, affine.apply(x))


def test_none_fits_nothing_and_layers_fit_one_each():
    assert fit(IDENTITY, anisotropic()) is None
    pooled = torch.tensor(np.stack([anisotropic(seed=s) for s in range(3)]))
    maps = fit_layers(TransformSpec("center"), pooled)
    # allclose defaults (rtol 1e-5, atol 1e-8): seeds give different means, far apart
    assert len(maps) == 3 and not np.allclose(maps[0].bias, maps[1].bias)


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("none", IDENTITY),
        ("center", TransformSpec("center")),
        ("centre", TransformSpec("center")),
        ("whiten", TransformSpec("whiten")),
        ("whiten-256", TransformSpec("whiten", 256)),
        ("abtt", TransformSpec("abtt", 2)),
        ("ABTT-3", TransformSpec("abtt", 3)),
    ],
)
def test_names_parse(text, spec):
    assert parse_transform(text) == spec


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("whitten", ["unknown transform 'whitten'", "did you mean 'whiten'"]),
        ("center-3", ["takes no size"]),
        ("whiten-0", ["positive integer"]),
        ("whiten-x", ["positive integer"]),
    ],
)
def test_bad_names_are_one_line_errors(text, words):
    with pytest.raises(TransformError) as error:
        parse_transform(text)
    assert all(word in str(error.value) for word in words) and "\n" not in str(error.value)


def test_lists_keep_order_and_drop_duplicates():
    assert [s.label for s in parse_transforms("none, whiten-8,none,center")] == ["none", "whiten-8", "center"]
    assert parse_transforms(None) == (IDENTITY,)


def test_sizes_are_checked_against_the_model_and_the_fit_set():
    with pytest.raises(TransformError, match="more than the model's hidden size"):
        TransformSpec("whiten", 64).check(hidden_size=32)
    with pytest.raises(TransformError, match="needs at least 65 fit texts"):
        TransformSpec("whiten", 64).check(fit_count=10)
    with pytest.raises(TransformError, match="needs at least 2 fit texts"):
        fit(TransformSpec("center"), anisotropic(1, 4))
    TransformSpec("whiten", 32).check(hidden_size=32, fit_count=33)


def test_reports_round_trip_the_spec_and_the_fit_set_hash_is_stable():
    spec = TransformSpec("whiten", 16)
    assert transform_from_json(spec.to_json()) == spec and transform_from_json(None) == IDENTITY
    assert (
        fit_set_of(["a", "b"], "x").sha256 == fit_set_of(["a", "b"], "y").sha256 != fit_set_of(["b", "a"], "x").sha256
    )


def test_a_map_that_would_leave_rounding_noise_is_refused_by_the_fit_states_rank():
    """Issue 33, cause 2: abtt removing every direction the fit states vary in outputs noise; the rank (not the
    texts' count) decides. A whitening above the rank is left to its variance floor (select scores it so too)."""
    from layerpick.core.transform import check_rank

    rng = np.random.default_rng(0)
    states = rng.normal(size=(40, 5)) @ rng.normal(size=(5, 32))  # 40 texts that vary in 5 of 32 directions
    for label in ("abtt-4", "whiten-5", "whiten-6", "center"):
        check_rank(parse_transform(label), states, "layer 2")
    with pytest.raises(TransformError, match="layer 2's fit states vary in 5 directions and it removes 5"):
        check_rank(parse_transform("abtt-5"), states, "layer 2")
    with pytest.raises(TransformError, match="abtt-32 removes all 32 of the model's dimensions"):
        parse_transform("abtt-32").check(hidden_size=32)
    with pytest.raises(TransformError, match="abtt-8 needs at least 10 fit texts"):
        parse_transform("abtt-8").check(hidden_size=32, fit_count=9)
