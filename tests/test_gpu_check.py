"""`benchmarks/gpu_check.sh` parses, and on a machine without CUDA says so, writes nothing and exits 0."""

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
