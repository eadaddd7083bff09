"""`layerpick export --dtype float16|bfloat16`: half-precision weights, half the size, that reload to layer K of the
full float32 model within the dtype's parity tolerance; layerpick.json and the model card record the dtype."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from sentence_transformers import SentenceTransformer

from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import LoadOptions, load_model
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import export_model
from layerpick.exporting.parity import PARITY_TOLERANCE
from tests.testkit.tiny import TEXTS

pytestmark = pytest.mark.slow

LAYER = 2
SAFETENSORS_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}


@pytest.fixture(scope="module")
def float32_exports(tiny_dirs, tmp_path_factory) -> dict[str, Path]:
    out = {}
    for family in ("llama", "bert"):
        out[family] = tmp_path_factory.mktemp(f"{family}-float32") / "out"
        export_model(str(tiny_dirs(family)), LAYER, out[family], ExportConfig(progress=False))
    return out


def tensor_dtypes(directory: Path) -> set[str]:
    with safe_open(str(directory / "model.safetensors"), "pt") as weights:
        return {str(weights.get_slice(key).get_dtype()) for key in weights.keys()}


@pytest.mark.parametrize(("family", "dtype"), [("llama", "float16"), ("llama", "bfloat16"), ("bert", "float16")])
def test_half_precision_export(family, dtype, tiny_dirs, float32_exports, tmp_path):
    source, out = tiny_dirs(family), tmp_path / "out"
    result = export_model(str(source), LAYER, out, ExportConfig(progress=False), load_options=LoadOptions(dtype=dtype))
    full = float32_exports[family]
    assert tensor_dtypes(out) == {SAFETENSORS_DTYPES[dtype]}
    assert tensor_dtypes(full) == {"F32"}
    assert result.weights_bytes / (full / "model.safetensors").stat().st_size < 0.52  # half, plus the header
    metadata = json.loads((out / "layerpick.json").read_text())
    assert metadata["dtype"] == result.dtype == dtype
    assert metadata["command"].endswith(f"--dtype {dtype}")
    assert f"safetensors, {dtype}" in (out / "README.md").read_text()
    reloaded = SentenceTransformer(str(out), device="cpu")
    assert next(reloaded.parameters()).dtype == getattr(torch, dtype)
    vectors = reloaded.encode(TEXTS, convert_to_tensor=True, batch_size=2).float()
    states = (
        collect(
            load_model(str(source)),
            TEXTS,
            CollectConfig(batch_size=2, max_length=result.max_seq_length, progress=False),
        )
        .layer(LAYER)
        .float()
    )  # float32 full model
    # PARITY_TOLERANCE (float16 5e-3, bfloat16 3e-2, relative): a few units of each dtype's precision
    tolerance = PARITY_TOLERANCE[dtype] * max(1.0, states.abs().max().item())
    assert (vectors - states).abs().max().item() <= tolerance
    assert (vectors - states).abs().max().item() > 0  # really computed in half precision


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_transformed_half_precision_export_holds_its_dense_in_that_dtype(dtype, tiny_dirs, tmp_path):
    """`--transform whiten-8 --dtype float16`: the Dense module is in the dtype the pooled vectors arrive in, and
    the export reloads to layer K of the half-precision model followed by the fitted map, within tolerance."""
    from layerpick.core.transform import fit, parse_transform

    source, out = tiny_dirs("llama"), tmp_path / "out"
    fit_file = tmp_path / "fit.txt"
    fit_file.write_text("\n".join(f"fit text {i} about subject {i % 7} and more" for i in range(40)) + "\n")
    options = LoadOptions(dtype=dtype)
    result = export_model(
        str(source),
        LAYER,
        out,
        ExportConfig(progress=False, transform="whiten-8", fit_texts=str(fit_file)),
        load_options=options,
    )
    assert result.dtype == dtype
    dense_dir = next(p for p in out.iterdir() if p.name.endswith("_Dense"))
    with safe_open(str(dense_dir / "model.safetensors"), "pt") as weights:
        assert {str(weights.get_slice(key).get_dtype()) for key in weights.keys()} == {SAFETENSORS_DTYPES[dtype]}
    reloaded = SentenceTransformer(str(out), device="cpu")
    vectors = reloaded.encode(TEXTS, convert_to_tensor=True, batch_size=2).float()
    assert vectors.shape[1] == 8
    loaded = load_model(str(source), options)
    config = CollectConfig(batch_size=2, max_length=result.max_seq_length, progress=False)
    fit_config = CollectConfig(batch_size=32, max_length=result.max_seq_length, progress=False)
    fit_states = collect(loaded, fit_file.read_text().splitlines(), fit_config).layer(LAYER)
    affine = fit(parse_transform("whiten-8"), fit_states)
    want = affine.apply_torch(collect(loaded, TEXTS, config).layer(LAYER).float()).float()
    # PARITY_TOLERANCE (as above): the half-precision Dense vs the float32 map
    tolerance = PARITY_TOLERANCE[dtype] * max(1.0, want.abs().max().item())
    assert (vectors - want).abs().max().item() <= tolerance
