"""A model split across devices (`--device-map auto --max-memory`) gives what the unsplit model gives.

This machine has no GPU, so the two parts are the CPU and the disk: accelerate keeps the first blocks in CPU
memory within `max_memory` and offloads the rest (the later blocks and the final norm) to the disk, loading
each when it runs. The per-layer pooled states of `collect` and the vectors of an export must equal the
unsplit model's. A split over several GPUs goes through the same hooks (`benchmarks/gpu_check.sh` runs on one).
"""

from __future__ import annotations

import json

import pytest
import torch
from sentence_transformers import SentenceTransformer

from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import LoadOptions, load_model, parse_max_memory
from layerpick.errors import LayerpickError
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.job import export_model
from tests.testkit.cli import assert_one_line_error, invoke
from tests.testkit.tiny import TEXTS

UNSPLIT = LoadOptions(device="cpu")
CPU_SHARE = 0.6  # of the weights' bytes: the embeddings and a first block fit in memory, the rest goes to disk


def split_options(directory) -> LoadOptions:
    weights = sum(p.numel() * p.element_size() for p in load_model(str(directory), UNSPLIT).model.parameters())
    return LoadOptions(device_map="auto", max_memory=f"cpu={int(weights * CPU_SHARE)}")


@pytest.mark.parametrize("family", ["llama", "bert"])
def test_split_model_collects_the_same_layers(tiny_dirs, family):
    directory = str(tiny_dirs(family))
    split = load_model(directory, split_options(directory))
    places = set(split.model.hf_device_map.values())
    assert places == {"cpu", "disk"}, split.model.hf_device_map  # really split, across two parts
    assert split.device == torch.device("cpu")  # where inputs go, though offloaded weights sit on "meta"
    config = CollectConfig(progress=False, batch_size=2)
    whole = collect(load_model(directory, UNSPLIT), TEXTS, config).pooled
    parted = collect(split, TEXTS, config).pooled
    assert parted.shape == whole.shape
    # 1e-6: the split model runs the same float32 ops in the same order; only where weights live differs
    assert (parted - whole).abs().max().item() <= 1e-6


def test_split_model_exports_the_same_vectors(tiny_dirs, tmp_path):
    directory = str(tiny_dirs("llama"))
    options = split_options(directory)
    whole = export_model(directory, 3, tmp_path / "whole", ExportConfig(progress=False), load_options=UNSPLIT)
    parted = export_model(directory, 3, tmp_path / "parted", ExportConfig(progress=False), load_options=options)
    # 1e-6: the split model runs the same float32 ops in the same order; only where weights live differs
    assert parted.parity_max_abs_diff <= 1e-6
    vectors = [
        SentenceTransformer(str(result.output), device="cpu").encode(TEXTS, convert_to_tensor=True)
        for result in (whole, parted)
    ]
    # 1e-6: both exports hold the same float32 weights; the same ops give (near) equal vectors
    assert (vectors[0] - vectors[1]).abs().max().item() <= 1e-6
    card = json.loads((tmp_path / "parted" / "layerpick.json").read_text())
    assert f"--device-map auto --max-memory {options.max_memory}" in card["command"]


@pytest.mark.slow
def test_cli_takes_max_memory(tiny_dirs, tmp_path):
    directory = str(tiny_dirs("llama"))
    options = split_options(directory)
    done = invoke(
        "collect",
        directory,
        "--calibration",
        write_texts(tmp_path),
        "--device-map",
        "auto",
        "--max-memory",
        options.max_memory,
        "--quiet",
    )
    assert done.returncode == 0, done.stderr


def write_texts(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(TEXTS) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, message",
    [
        (["--max-memory", "cpu=1GiB"], "--max-memory applies to a model spread over devices: add --device-map auto"),
        (["--device-map", "auto", "--max-memory", "gpu=1GiB"], "write DEVICE=SIZE pairs"),
        (["--device-map", "auto", "--max-memory", "cpu=lots"], "write DEVICE=SIZE pairs"),
    ],
)
def test_bad_max_memory_is_one_line(tiny_dirs, flags, message):
    done = invoke("collect", tiny_dirs("llama"), *flags, "--quiet")
    assert_one_line_error(done, message)


def test_max_memory_parses_as_accelerate_takes_it():
    assert parse_max_memory("0=20GiB, 1=500MB,cpu=64GiB,disk=2000") == {
        0: 20 * 2**30,
        1: 500 * 10**6,
        "cpu": 64 * 2**30,
        "disk": 2000,
    }
    with pytest.raises(LayerpickError, match="--max-memory is empty"):
        parse_max_memory(" , ")
