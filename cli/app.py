"""The `layerpick` entry point: interrupt handling first, then the commands, then exit codes.

`main` installs the handlers of SIGINT (Ctrl-C), SIGTERM (`timeout`, `docker stop`, CI cancellation) and SIGHUP
(a closed terminal) before anything heavy is imported (torch takes seconds), so each of them at any moment
cleans up, prints "layerpick: aborted" and exits 128 + the signal's number (130, 143, 129), also when a library
swallowed the KeyboardInterrupt or turned it into another error on its way up (`layerpick._util.interrupt`
remembers the request). Once the command's output is in place the command has succeeded: a signal during its
final printing is noted and the exit code stays 0, and once `run` has returned, stop signals are ignored through
the interpreter's shutdown (`settle`). Settings the
libraries read once at import time (whether their progress bars draw) are made before they are imported.
The Typer app itself lives in `layerpick.cli.commands` (`app` here is the same object, imported on use).

Exit codes: 0 ok, 1 user error, 2 usage error, 3 internal error, 130/143/129 interrupted (see `layerpick.cli.errors`).
"""

from __future__ import annotations

import logging
import os
import signal
import sys

from layerpick._util import interrupt
from layerpick.cli import errors

TRUE_WORDS = ("1", "true", "t", "yes", "y", "on")


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def main() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, _on_interrupt)
    code = run(sys.argv[1:])
    settle()
    sys.exit(code)


def settle() -> None:
    """The command's outcome is decided (its output committed, its last line printed): stop signals are ignored
    from here to the process's end. The interpreter's shutdown (atexit, freeing torch and the libraries) takes
    up to seconds, and Python hands SIGINT back to the default action early in it, so a Ctrl-C then killed a
    finished command (exit 130, no message); an ignored signal stays ignored through the shutdown."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def run(argv: list[str]) -> int:
    """Run the command line `argv` (without the program name); report any error on stderr; return the exit code."""
    try:
        code = _dispatch(argv)
    except BaseException as error:  # noqa: BLE001 - the one place that turns every outcome into an exit code
        code = errors.exit_code(error)
    if interrupt.finished() and code == errors.INTERRUPTED:
        return 0  # the output was in place before the signal arrived: the command succeeded
    if code == errors.INTERRUPTED or interrupt.requested():
        if errors.debug_enabled() and interrupt.where():
            print(
                "Traceback (most recent call last):\n" + "".join(interrupt.where()) + "KeyboardInterrupt",
                file=sys.stderr,
            )
        print("layerpick: aborted", file=sys.stderr)
        code = interrupt.exit_code()
    return code


def _on_interrupt(signum, frame) -> None:
    where = None
    if errors.debug_enabled():  # LAYERPICK_DEBUG=1: where the interrupt arrived, whatever catches it later
        import traceback

        where = traceback.format_stack(frame)
    interrupt.arrive(signum, where)


def _dispatch(argv: list[str]) -> int:
    if argv == ["--version"]:  # answered without importing torch and the libraries (nothing to warn about)
        from layerpick import __version__

        print(f"layerpick {__version__}")
        return 0
    prepare_libraries(argv)
    from layerpick.cli.commands import app

    code = app(args=argv, prog_name="layerpick", standalone_mode=False)
    return code if isinstance(code, int) else 0


def prepare_libraries(argv: list[str]) -> None:
    """Before the libraries are imported: their progress bars stay off under --quiet (or LAYERPICK_QUIET) and
    when stderr is not a terminal (logs); tqdm, huggingface_hub and datasets read these once, at import. Under
    --quiet sentence-transformers' notices (such as which default prompt applies) stay off too; layerpick's own
    warnings do not."""
    quiet = any(arg in ("--quiet", "-q") for arg in argv) or os.environ.get("LAYERPICK_QUIET", "").lower() in TRUE_WORDS
    if quiet:
        logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    if quiet or not sys.stderr.isatty():
        for name in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS"):
            os.environ.setdefault(name, "1")


def __getattr__(name: str):
    if name == "app":  # `from layerpick.cli.app import app`, for tests and embedding
        from layerpick.cli.commands import app

        return app
    raise AttributeError(name)
