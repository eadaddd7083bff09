"""Files layerpick writes follow the umask like any file the user creates (tempfile makes 0600 files and 0700
folders, and transformers saves weights 0600): another user must be able to read and serve an export.

The tests set the umask to 0002, so a file must come out 0664 and a folder 0775; 0600/0700 would fail."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from layerpick.benchmark.run import BenchConfig
from layerpick.selection.config import SelectConfig
from layerpick.workflow.report import write_run_report
from layerpick.workflow.run import RunConfig, run_workflow
from tests.testkit.tasks import sts_folder

pytestmark = pytest.mark.slow

UMASK = 0o002
FILE, FOLDER = 0o666 & ~UMASK, 0o777 & ~UMASK


@pytest.fixture
def umask():
    previous = os.umask(UMASK)
    try:
        yield UMASK
    finally:
        os.umask(previous)


def wrong_modes(folder: Path) -> dict[str, str]:
    """Every file or folder under `folder` (itself included) whose mode is not what the umask gives."""
    wrong = {}
    for path in [folder, *folder.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        expected = FOLDER if path.is_dir() else FILE
        if not path.is_symlink() and mode != expected:
            wrong[str(path.relative_to(folder.parent))] = oct(mode)
    return wrong


def test_a_run_writes_everything_with_the_umask(tiny_dirs, tmp_path, umask):
    """select report, validation (results, store), the export's weights, bench.json, run.json, the run report."""
    task = sts_folder(tmp_path)
    config = RunConfig(
        tasks=(str(task),),
        layers="last",
        select=SelectConfig(limit=12, metrics="dime"),
        bench=BenchConfig(batch_sizes=(1,), texts=4, repeats=1, memory=False),
    )
    result = run_workflow(str(tiny_dirs("llama")), tmp_path / "out", config=config, progress=False)
    write_run_report(result)
    out = tmp_path / "out"
    for name in (
        "model/model.safetensors",
        "select/report.json",
        "validate/validation.json",
        "run.json",
        "bench.json",
        "report.html",
    ):
        assert (out / name).is_file(), name
    assert wrong_modes(out) == {}


def test_export_collect_and_compare_outputs_follow_the_umask(tiny_dirs, tmp_path, umask):
    from layerpick import LoadOptions
    from layerpick.comparison.run import compare_reports
    from layerpick.core.collect_job import collect_layers
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model
    from layerpick.selection.job import select_and_write

    model = str(tiny_dirs("llama"))
    export_model(model, 2, tmp_path / "deep" / "export", ExportConfig(progress=False))
    collect_layers(model, limit=4, progress=False, output=tmp_path / "states" / "states.safetensors")
    select_and_write(model, LoadOptions(), SelectConfig(limit=12, metrics="dime"), tmp_path / "select")
    compare_reports([tmp_path / "select"], tmp_path / "compare")
    for name in ("deep", "states", "select", "compare"):
        assert wrong_modes(tmp_path / name) == {}, name
