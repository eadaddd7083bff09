"""`benchmarks/gpu_check.sh` parses; on a machine without CUDA it says so, writes nothing and exits 0; its select +
validate step runs on the CPU."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
GPU_MD = ROOT / "benchmarks" / "results" / "gpu.md"


def test_script_parses():
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_helper_parses():
    done = subprocess.run(
        [sys.executable, str(SCRIPT.with_suffix(".py")), "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0 and "picks" in done.stdout, done.stderr


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the script would run the check")
def test_without_cuda_it_says_so_and_writes_nothing(tmp_path):
    before = GPU_MD.stat().st_mtime_ns if GPU_MD.exists() else None
    done = subprocess.run(
        ["bash", str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHON": sys.executable,
            "HOME": str(tmp_path),
            "GPU_CHECK_WORK": str(tmp_path / "work"),
        },
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no CUDA device"
    assert (GPU_MD.stat().st_mtime_ns if GPU_MD.exists() else None) == before
    assert not (tmp_path / "work").exists()


@pytest.mark.slow
@pytest.mark.integration
def test_a_pick_row_runs_the_library_as_the_gpu_check_does(tmp_path, monkeypatch):
    """The check's select + validate step, run on the CPU on one small task: the row it writes has the pick and a
    mean score per layer (the script once read a field that the typed validation result no longer has). 32
    calibration texts, not the check's 128: the row's shape is what is checked, not the pick's quality."""
    from tests.testkit.paths import SHARED_DATA

    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT.with_suffix(".py"))
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    monkeypatch.setattr(gpu_check, "LIMIT", 32)
    row = gpu_check.pick_row("minilm-l6", [str(SHARED_DATA / "BIOSSES")], "cpu", "float32", tmp_path)
    assert "error" not in row, row
    assert 1 <= row["pick"] <= 6
    assert len(row["mean_by_layer"]) == 7 and all(0 < score < 1 for score in row["mean_by_layer"][1:])
    assert gpu_check.judge([row])[0]["ok"]
