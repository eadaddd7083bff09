"""On a CUDA GPU, layer k is what it is on the CPU: collect, half precision, export and a GPU+CPU device map.

Marked `cuda` (the subset `benchmarks/gpu_check.sh` runs) and skipped where torch sees no CUDA device. Float32
on the GPU matches the CPU to rounding; float16 and bfloat16 match within the tolerances export's own parity
check uses (`PARITY_TOLERANCE`, relative to the largest value).
"""

from __future__ import annotations

import json

import pytest
import torch
from sentence_transformers import SentenceTransformer

from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import LoadOptions, load_model
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import export_model
from layerpick.exporting.parity import PARITY_TOLERANCE
from tests.testkit.tiny import TEXTS

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]

CPU = LoadOptions(device="cpu")
CONFIG = CollectConfig(progress=False, batch_size=2)
FLOAT32_GPU_TOLERANCE = 1e-4  # relative: GPU kernels reorder float32 sums


def relative_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).abs().max() / b.abs().max().clamp(min=1.0)).item()


def pooled(directory, options: LoadOptions) -> torch.Tensor:
    return collect(load_model(str(directory), options), TEXTS, CONFIG).pooled


@pytest.mark.parametrize("family", ["llama", "gemma3", "bert"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_collect_on_cuda_matches_the_cpu(tiny_dirs, family, dtype):
    loaded = load_model(str(tiny_dirs(family)), LoadOptions(device="cuda", dtype=dtype))
    assert loaded.device.type == "cuda"
    # float16 5e-3 and bfloat16 3e-2 (relative): a few units of each dtype's precision over the blocks
    tolerance = FLOAT32_GPU_TOLERANCE if dtype == "float32" else PARITY_TOLERANCE[dtype]
    assert relative_diff(collect(loaded, TEXTS, CONFIG).pooled, pooled(tiny_dirs(family), CPU)) <= tolerance


def test_export_on_cuda_reloads_on_the_cpu(tiny_dirs, tmp_path):
    source = str(tiny_dirs("llama"))
    result = export_model(
        source, 3, tmp_path / "gpu", ExportConfig(progress=False), load_options=LoadOptions(device="cuda")
    )
    assert json.loads((tmp_path / "gpu" / "layerpick.json").read_text())["device"].startswith("cuda")
    vectors = SentenceTransformer(str(result.output), device="cpu").encode(TEXTS, convert_to_tensor=True)
    assert relative_diff(vectors, pooled(source, CPU)[3]) <= FLOAT32_GPU_TOLERANCE


def test_device_map_across_gpu_and_cpu(tiny_dirs):
    source = str(tiny_dirs("llama"))
    weights = sum(p.numel() * p.element_size() for p in load_model(source, CPU).model.parameters())
    split = load_model(source, LoadOptions(device_map="auto", max_memory=f"0={int(weights * 0.6)},cpu=1GiB"))
    assert {str(place) for place in split.model.hf_device_map.values()} == {"0", "cpu"}, split.model.hf_device_map
    assert relative_diff(collect(split, TEXTS, CONFIG).pooled, pooled(source, CPU)) <= FLOAT32_GPU_TOLERANCE
