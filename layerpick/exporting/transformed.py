"""A post-pooling transform in an export: fitted at layer K, written as a sentence-transformers `Dense` module.

The map is fitted exactly as select and validate fit it (`core.transform.fit` on layer K, pooled by
`core.collect` over the fit texts as the source's pipeline prepares them; the export runs them through the cut
model, whose output is the full model's layer K), so the exported vectors are the scored ones. It is saved as
`Dense` (weight and bias, identity activation) between Pooling and Normalize, with only the config keys every
sentence-transformers version from 2.x reads, and its weights both as `model.safetensors` and as
`pytorch_model.bin` (sentence-transformers 2.x's Dense reads only the latter).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from layerpick.core.calibration import CalibrationSet
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.fit_texts import prepare_fit, report_fit_source
from layerpick.core.models import LoadedModel
from layerpick.core.transform import AffineMap, TransformSpec, check_rank, fit, fit_set_of
from layerpick.errors import LayerpickError

DENSE_CONFIG_KEYS = ("in_features", "out_features", "bias", "activation_function")
IDENTITY_ACTIVATION = "torch.nn.modules.linear.Identity"


@dataclass(frozen=True)
class FittedTransform:
    """The spec, its map at the exported layer, and the fit set it came from."""

    spec: TransformSpec
    affine: AffineMap
    fit_texts: CalibrationSet

    def to_json(self) -> dict[str, Any]:
        return {
            **self.spec.to_json(),
            "fit": fit_set_of(self.fit_texts.texts, self.fit_texts.source, self.fit_texts.field).to_json(),
            "output_dim": self.affine.out_dim,
            "module": "sentence_transformers.models.Dense",
        }


def fit_source(given: str | None, report: Any) -> str | None:
    """--fit-texts, else the fit set the select report recorded, else the embedded calibration set."""
    return given if given is not None else report_fit_source(report)


def prepare_fit_texts(
    spec: TransformSpec,
    source: str | None,
    representation: str,
    model: str,
    load_options: Any,
    recorded: dict[str, Any] | None,
    field: str | None = None,
) -> CalibrationSet | None:
    """The fit texts, checked before the model loads (None for `none`); with a report, they must be the texts
    its transform was fitted on."""
    if spec.is_identity:
        return None
    texts = prepare_fit((spec,), source, representation, model, load_options, field)
    expected = ((recorded or {}).get("fit") or {}).get("sha256")
    if expected and expected != fit_set_of(texts.texts, texts.source).sha256:
        raise LayerpickError(
            f"the fit texts ({texts.source}) are not those the report's transform was fitted on "
            "(their sha256 differs): give the same --fit-texts"
        )
    return texts


def fit_at_layer(
    loaded: LoadedModel, spec: TransformSpec, texts: CalibrationSet, layer: int, config: CollectConfig
) -> FittedTransform:
    """The map fitted on layer `layer` over the fit texts: `loaded` is the full model or the model cut after
    `layer` (its output is the full model's layer `layer`, as the parity check proves, for K blocks' work)."""
    states = collect(loaded, loaded.pipeline.prepare(texts.texts), config).layer(layer)
    check_rank(spec, states, f"layer {layer}")  # an export ships one map: a degenerate one is refused, not served
    return FittedTransform(spec, fit(spec, states), texts)


def apply(fitted: FittedTransform | None, vectors: torch.Tensor) -> torch.Tensor:
    """What the Dense module computes, in float64 then float32: the parity reference's transform step."""
    return vectors if fitted is None else fitted.affine.apply_torch(vectors).float()


def working_scale(fitted: FittedTransform | None, vectors: torch.Tensor, unit: bool) -> float:
    """The largest magnitude the Dense module's sums reach on `vectors`: max of |W| |x| + |b| per output (over the
    output's norm when the pipeline normalises). Its rounding error is relative to this, not to the output: a
    whitening of anisotropic vectors subtracts two large, nearly equal terms (W x and -W mean). 0 without one."""
    if fitted is None:
        return 0.0
    weight = torch.as_tensor(fitted.affine.weight, dtype=torch.float64).abs()
    bias = torch.as_tensor(fitted.affine.bias, dtype=torch.float64).abs()
    sums = vectors.double().abs() @ weight.T + bias  # (N, out)
    if unit:
        sums = sums / fitted.affine.apply_torch(vectors).norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return float(sums.max())


def dense_module(fitted: FittedTransform, dtype: torch.dtype = torch.float32):
    """A sentence-transformers Dense holding the fitted weight and bias in the export's `dtype` (the dtype the
    pooled vectors arrive in), identity activation."""
    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer.modules import Dense
    except ImportError:
        from sentence_transformers.models import Dense
    affine = fitted.affine
    return Dense(
        affine.in_dim,
        affine.out_dim,
        bias=True,
        activation_function=torch.nn.Identity(),
        init_weight=torch.tensor(affine.weight, dtype=dtype),
        init_bias=torch.tensor(affine.bias, dtype=dtype),
    )


def rewrite_dense_configs(directory: Path, modules: list[dict[str, Any]]) -> None:
    """Keep only the Dense keys old readers accept (sentence-transformers 6 adds module input/output names)."""
    for path in _dense_dirs(directory, modules):
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        legacy = {key: config[key] for key in DENSE_CONFIG_KEYS if key in config}
        legacy["activation_function"] = IDENTITY_ACTIVATION
        (path / "config.json").write_text(json.dumps(legacy, indent=2) + "\n", encoding="utf-8")


def write_legacy_dense_weights(directory: Path, modules: list[dict[str, Any]]) -> None:
    """`pytorch_model.bin` beside each Dense module's `model.safetensors`, the same tensors: sentence-transformers
    2.x's Dense reads only that file."""
    from safetensors.torch import load_file

    for path in _dense_dirs(directory, modules):
        torch.save(load_file(str(path / "model.safetensors")), path / "pytorch_model.bin")


def _dense_dirs(directory: Path, modules: list[dict[str, Any]]) -> list[Path]:
    return [directory / entry["path"] for entry in modules if entry["type"].rsplit(".", 1)[-1] == "Dense"]
