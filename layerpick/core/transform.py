"""Post-pooling transforms: an affine map `y = x @ weight.T + bias`, fitted per layer on unlabelled texts.

The pipeline of an embedding is "layer k -> pooling -> transform -> normalize". A transform is fitted from the
pooled states of a fit set (the calibration texts, or the user's own corpus) at one layer, in float64:

- `none`: the identity (no module is written).
- `center`: subtract the fit set's mean.
- `whiten-D`: centre, rotate onto the top D principal directions and scale each to unit variance
  (BERT-whitening, Su et al. 2021). `whiten` alone keeps every direction the fit set supports.
- `abtt-K`: centre and remove the top K principal directions ("all-but-the-top", Mu and Viswanath 2018);
  the dimension stays. `abtt` alone removes 2.

The principal directions come from an SVD of the centred fit states; each direction's sign is fixed (its
largest component positive) so the same texts give the same map on every machine, and eigenvalues are floored
at `EIGEN_FLOOR` times the largest, so a near-degenerate direction cannot blow up. An affine map applied to every
token's state commutes with mean, CLS and last-token pooling, which is why the same map can sit after pooling
(a sentence-transformers `Dense` module) or inside an ONNX graph before it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from layerpick._util.numerals import ascii_int
from layerpick.errors import LayerpickError

if TYPE_CHECKING:
    import torch

KINDS = ("none", "center", "whiten", "abtt")
DEFAULT_ABTT = 2
# What select (and so run) scores without --transform: `auto` is `none` for a trained sentence embedder and
# `none,whiten-256` for other models, the rule choosing (core.fit_texts.expand_auto; the evidence is
# benchmarks/results/transforms.md). validate and export take the select report's transform, else none.
DEFAULT_TRANSFORM = "auto"
EIGEN_FLOOR = 1e-6  # relative to the largest eigenvalue of the fit states' covariance


class TransformError(LayerpickError):
    """An unknown transform name, or a transform the fit set or the model cannot support."""


@dataclass(frozen=True)
class TransformSpec:
    """What to fit: a kind from KINDS and its size (whiten: output dimensions, None = all the fit set supports;
    abtt: directions removed)."""

    kind: str = "none"
    dim: int | None = None

    @property
    def label(self) -> str:
        return self.kind if self.dim is None else f"{self.kind}-{self.dim}"

    @property
    def is_identity(self) -> bool:
        return self.kind == "none"

    def min_fit_texts(self) -> int:
        """The fewest fit texts that determine this transform."""
        if self.kind == "none":
            return 0
        if self.kind == "center":
            return 2
        if self.kind == "abtt":  # N centred texts vary in at most N - 1 directions; one must be left
            return (self.dim or 1) + 2
        return (self.dim or 1) + 1

    def check(self, hidden_size: int | None = None, fit_count: int | None = None) -> "TransformSpec":
        """One-line errors for a size the model (hidden size) or the fit set (number of texts) cannot give."""
        if self.kind == "abtt" and hidden_size is not None and self.dim is not None and self.dim >= hidden_size:
            raise TransformError(
                f"{self.label} removes all {hidden_size} of the model's dimensions: nothing but rounding noise would "
                f"be left; choose abtt-K with K below {hidden_size}"
            )
        if hidden_size is not None and self.dim is not None and self.dim > hidden_size:
            what = "output dimensions" if self.kind == "whiten" else "removed directions"
            raise TransformError(
                f"{self.label}: {self.dim} {what} is more than the model's hidden size ({hidden_size})"
            )
        if fit_count is not None and fit_count < self.min_fit_texts():
            raise TransformError(
                f"{self.label} needs at least {self.min_fit_texts()} fit texts (got {fit_count}); "
                "give more with --fit-texts or a smaller dimension"
            )
        return self

    def to_json(self) -> dict[str, Any]:
        return {"name": self.label, "kind": self.kind, "dim": self.dim}


IDENTITY = TransformSpec()


def parse_transform(value: str) -> TransformSpec:
    """`none`, `center`, `whiten`, `whiten-256`, `abtt`, `abtt-3`."""
    text = value.strip().lower()
    kind, _, size = text.partition("-")
    if kind == "centre":
        kind = "center"
    if kind not in KINDS:
        close = difflib.get_close_matches(kind, KINDS, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise TransformError(
            f"unknown transform {value!r}{hint} (choose auto, none, center, whiten, whiten-D, abtt, abtt-K)"
        )
    if not size:
        return TransformSpec(kind, DEFAULT_ABTT if kind == "abtt" else None)
    if kind in ("none", "center"):
        raise TransformError(f"transform {kind!r} takes no size (got {value!r})")
    number = ascii_int(size)
    if number is None or number < 1:
        raise TransformError(f"transform {value!r}: the size after '-' must be a positive integer")
    return TransformSpec(kind, number)


def parse_transforms(value: str | None) -> tuple[TransformSpec, ...]:
    """A comma-separated list (`none,whiten-256`), duplicates dropped, order kept; None or '' -> (none,)."""
    parts = [part for part in (value or "").split(",") if part.strip()]
    specs = tuple(dict.fromkeys(parse_transform(part) for part in parts))
    return specs or (IDENTITY,)


@dataclass(frozen=True)
class AffineMap:
    """y = x @ weight.T + bias; weight (out, in), bias (out,), float64."""

    weight: np.ndarray
    bias: np.ndarray

    @property
    def in_dim(self) -> int:
        return int(self.weight.shape[1])

    @property
    def out_dim(self) -> int:
        return int(self.weight.shape[0])

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """(n, in) -> (n, out), in float64."""
        return np.asarray(vectors, dtype=np.float64) @ self.weight.T + self.bias

    def apply_torch(self, vectors: torch.Tensor) -> torch.Tensor:
        import torch  # loaded already: `vectors` is a tensor

        weight = torch.as_tensor(self.weight, dtype=torch.float64, device=vectors.device)
        bias = torch.as_tensor(self.bias, dtype=torch.float64, device=vectors.device)
        return vectors.double() @ weight.T + bias


@dataclass(frozen=True)
class FitSet:
    """What a transform was fitted on: where the texts came from, how many, and their hash."""

    source: str
    count: int
    sha256: str
    field: str | None = None  # the JSONL field the texts were read from (None: `text`, or not JSONL)

    def to_json(self) -> dict[str, Any]:
        recorded = {"source": self.source, "count": self.count, "sha256": self.sha256}
        return {**recorded, "field": self.field} if self.field is not None else recorded


def fit_set_of(texts: Sequence[str], source: str, field: str | None = None) -> FitSet:
    """The fit set's record; its hash is the calibration set's (`CalibrationSet.sha256`) for the same texts."""
    from layerpick.core.calibration import CalibrationSet

    return FitSet(source, len(texts), CalibrationSet(list(texts), source).sha256, field)


def fit(spec: TransformSpec, states: np.ndarray | torch.Tensor) -> AffineMap | None:
    """The map of `spec` fitted on one layer's pooled states (N, D); None for `none`."""
    if spec.is_identity:
        return None
    x = _float64(states)
    spec.check(hidden_size=x.shape[1], fit_count=x.shape[0])
    mean = x.mean(axis=0)
    if spec.kind == "center":
        weight = np.eye(x.shape[1])
    else:
        directions, variances = principal_directions(x - mean)
        weight = (
            _whitening(spec, directions, variances, x.shape)
            if spec.kind == "whiten"
            else _all_but_the_top(spec, directions)
        )
    return AffineMap(weight, -weight @ mean)


def fit_layers(spec: TransformSpec, pooled: torch.Tensor | np.ndarray) -> list[AffineMap | None]:
    """One map per layer of pooled states (L+1, N, D)."""
    return [fit(spec, layer) for layer in pooled]


def principal_directions(centred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Columns (D, r) of the principal directions, largest variance first, signs fixed; and their variances
    (r,), floored at EIGEN_FLOOR of the largest."""
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    directions = vt.T
    signs = np.sign(directions[np.argmax(np.abs(directions), axis=0), np.arange(directions.shape[1])])
    directions = directions * np.where(signs == 0, 1.0, signs)
    variances = singular**2 / max(centred.shape[0] - 1, 1)
    floor = max(float(variances.max(initial=0.0)) * EIGEN_FLOOR, np.finfo(np.float64).tiny)
    return directions, np.maximum(variances, floor)


def check_rank(spec: TransformSpec, states: np.ndarray | torch.Tensor, where: str) -> None:
    """One line when an abtt would remove every direction the fit states vary in (their numerical rank: variances
    above EIGEN_FLOOR of the largest): what it leaves is rounding noise. A whitening keeping more directions than
    the rank is not refused here: select scores it the same way (a LayerNorm'd GPT-2's states lie in a hyperplane,
    rank D - 1, and its whiten-D is what select picks), and its floored variances keep the map finite."""
    x = _float64(states)
    variances = np.linalg.svd(x - x.mean(axis=0), compute_uv=False) ** 2
    rank = int((variances > EIGEN_FLOOR * variances.max(initial=0.0)).sum())
    if spec.kind == "abtt" and (spec.dim or DEFAULT_ABTT) >= rank:
        raise TransformError(
            f"{spec.label}: {where}'s fit states vary in {rank} directions and it removes {spec.dim}: nothing but "
            f"rounding noise would be left; choose abtt-K with K below {rank}"
        )


def supported_dim(count: int, hidden_size: int) -> int:
    """The most whitened dimensions N centred fit states of width D can give: min(D, N - 1)."""
    return max(min(hidden_size, count - 1), 1)


def _whitening(spec: TransformSpec, directions: np.ndarray, variances: np.ndarray, shape) -> np.ndarray:
    dim = spec.dim or supported_dim(shape[0], shape[1])
    return (directions[:, :dim] / np.sqrt(variances[:dim])).T


def _all_but_the_top(spec: TransformSpec, directions: np.ndarray) -> np.ndarray:
    top = directions[:, : spec.dim]
    return np.eye(directions.shape[0]) - top @ top.T


def _float64(states: np.ndarray | torch.Tensor) -> np.ndarray:
    if hasattr(states, "detach"):  # a torch tensor (this module imports without torch: the CLI's options read it)
        states = states.detach().cpu().double().numpy()
    x = np.asarray(states, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"expected pooled states (N, D), got shape {x.shape}")
    if not np.isfinite(x).all():
        raise TransformError("the fit states hold NaN or inf values; no transform can be fitted on them")
    return x


def transform_from_json(data: dict[str, Any] | None) -> TransformSpec:
    """The spec a report recorded (None or absent: the identity, as in reports made before transforms)."""
    if not data:
        return IDENTITY
    return TransformSpec(data.get("kind", "none"), data.get("dim"))
