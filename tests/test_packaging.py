"""The wheel: no top-level `cli` module, the CLI installed as `layerpick.cli`, data files included."""

import configparser
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        check=True,
        capture_output=True,
        cwd=out,
    )
    return next(out.glob("layerpick-*.whl"))


def test_wheel_top_level_names(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"layerpick"}
    assert "layerpick/cli/app.py" in names and "layerpick/data/calibration.txt" in names
    assert not any(n.startswith("cli/") for n in names)


def test_wheel_holds_every_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = [
        init.parent.relative_to(ROOT)
        for init in (ROOT / "layerpick").rglob("__init__.py")
        if "__pycache__" not in init.parts and "cli" not in init.relative_to(ROOT).parts
    ]
    assert len(packages) > 10
    missing = [str(folder) for folder in packages if f"{folder.as_posix()}/__init__.py" not in names]
    assert missing == [], f"packages missing from pyproject's list: {missing}"


def test_wheel_entry_point_runs_from_installed_layout(wheel, tmp_path):
    archive = zipfile.ZipFile(wheel)
    archive.extractall(tmp_path)
    info = next(n for n in archive.namelist() if n.endswith("entry_points.txt"))
    entry = configparser.ConfigParser()
    entry.read_string(archive.read(info).decode())
    module, _, function = entry["console_scripts"]["layerpick"].partition(":")
    code = (
        f"import layerpick, sys; assert layerpick.__file__.startswith({str(tmp_path)!r}); "
        f"sys.argv = ['layerpick', '--version']; from {module} import {function}; {function}()"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("layerpick ")


def test_editable_install_gives_the_command():
    result = subprocess.run([str(Path(sys.executable).parent / "layerpick"), "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "select" in result.stdout
