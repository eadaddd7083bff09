"""Running `layerpick` in a test: the installed command in a child process (`LAYERPICK`), or the same command line
in this process (`invoke`), and checking its one-line errors.

A child process costs about 1.4 s before any work (the interpreter, then torch and the libraries a command
imports); `invoke` runs the same `layerpick.cli.app.run(argv)` that the entry point calls, with its stdout and
stderr captured, so a test pays only for the work. Keep a child process where the process is what is under
test: signals, exit at interpreter shutdown, the installed script, two processes at once, fresh-process memory.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
from pathlib import Path

LAYERPICK = str(Path(sys.executable).parent / "layerpick")


def invoke(
    *argv, env: dict[str, str] | None = None, cwd: str | Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess:
    """`layerpick *argv` run in this process, as the entry point runs it (`layerpick.cli.app.run`): the exit code,
    stdout and stderr in a `CompletedProcess`, like `subprocess.run(..., capture_output=True, text=True)`.

    `env` adds variables (`None` as a value removes one) for this call only, `cwd` is the working directory, and
    `stdin` is what the command reads. What a fresh process would start with is restored around the call: the
    environment, the working directory, the interrupt state, and the root logger (the CLI configures it with
    `logging.basicConfig`, which does nothing while pytest's handlers are on it, so they are set aside and a
    warning reaches the captured stderr as it reaches a terminal)."""
    from layerpick._util import interrupt
    from layerpick.cli import app as cli_app

    args = [str(arg) for arg in argv]
    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    saved_stdin = sys.stdin
    try:
        for name, value in (env or {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin = io.StringIO(stdin or "")
        root.handlers = []
        interrupt.reset()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_app.run(args)
    finally:
        interrupt.reset()
        for handler in root.handlers:
            if handler not in saved_handlers:
                handler.close()
        root.handlers, root.level = saved_handlers, saved_level
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["layerpick", *args], code, out.getvalue(), err.getvalue())


def assert_one_line_error(result, message):
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().startswith("layerpick: error:")
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
