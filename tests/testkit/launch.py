"""The real `layerpick` entry point in a child process, paused at a chosen function, so that a test can send it
a signal, or start a second process, at an exact moment (no timing guesses).

`launch(tmp_path, "layerpick.exporting.parity:check_parity", "before", *argv)` starts `layerpick *argv` with that
function wrapped: on reaching it ("before") or on returning from it ("after") the child writes a marker file
and waits until the test sends a signal or calls `release`. The wrapper is installed on the module
attribute, so every caller that looks the function up through its module goes through it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = """
import importlib, sys, time
from pathlib import Path
marker, release, where, when = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
sys.argv = ["layerpick", *sys.argv[5:]]
from layerpick._util import interrupt
from layerpick.cli import app
module_name, name = where.split(":")

def pause():
    marker.write_text(str(time.time()))
    deadline = time.monotonic() + 120
    while not release.exists() and interrupt._state["signal"] is None and time.monotonic() < deadline:
        time.sleep(0.02)

def install():
    module = importlib.import_module(module_name)
    original = getattr(module, name)
    def wrapped(*args, **kwargs):
        if when == "before":
            pause()
            return original(*args, **kwargs)
        result = original(*args, **kwargs)
        pause()
        return result
    setattr(module, name, wrapped)

prepare = app.prepare_libraries
def prepare_then_install(argv):
    prepare(argv)
    install()
app.prepare_libraries = prepare_then_install
app.main()
"""


@dataclass
class Launched:
    process: subprocess.Popen
    marker: Path
    release_file: Path

    def release(self) -> None:
        self.release_file.write_text("go")

    def finish(self, timeout: float = 300) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out, err


def launch(
    tmp_path: Path, where: str, when: str, *argv: str, env: dict | None = None, cwd: Path | None = None
) -> Launched:
    """Start `layerpick *argv`, paused `when` ("before" / "after") `where` ("module:function"); return once it
    is there."""
    tag = f"{where.replace(':', '-')}-{when}-{time.monotonic_ns()}"
    marker, release = tmp_path / f"marker-{tag}", tmp_path / f"release-{tag}"
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(marker), str(release), where, when, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    deadline = time.monotonic() + 300
    while not marker.exists():
        if process.poll() is not None:
            raise AssertionError(f"the command ended before reaching {where}: {process.communicate()}")
        assert time.monotonic() < deadline, f"the command never reached {where}"
        time.sleep(0.02)
    return Launched(process, marker, release)
