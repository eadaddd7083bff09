"""Whether the user asked to stop (Ctrl-C, SIGTERM, SIGHUP), remembered even when a library swallowed the
KeyboardInterrupt, and the exact moment after which a command has succeeded whatever arrives.

Owns one process-wide state. The CLI's signal handler calls `arrive(signum)`: it remembers the request and
raises KeyboardInterrupt, unless

- the command's result is already in place (`finished()`): the command has succeeded, and an interrupt during
  its final printing or cleanup must not turn that into a failure, so the signal is only noted;
- a commit is in progress (`shielded()`): the renames that put a result in place run to their end, and the
  interrupt is raised when the shield ends (or not at all, when that commit was the command's last).

Code about to make a result visible (the atomic writers in `layerpick._util.atomic`) calls `check()`, so an
interrupt that some library caught and ignored still stops the command before anything is committed; once a
result is in place they call `placed(path)`, which finishes the command when `path` is the output the CLI
named as its last (`final_output`).
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

# set from a signal handler, which runs in the main thread
_state: dict = {
    "requested": False,
    "where": None,
    "signal": None,
    "finished": False,
    "final": None,
    "shield": 0,
    "pending": False,
}


def request(where: list[str] | None = None, signum: int = signal.SIGINT) -> None:
    """Remember that the user asked to stop (the signal, and for debugging the stack it arrived in)."""
    _state["requested"] = True
    _state["where"] = _state["where"] or where
    _state["signal"] = _state["signal"] or signum


def arrive(signum: int, where: list[str] | None = None) -> None:
    """A stop signal arrived: remember it; raise KeyboardInterrupt unless the command has already succeeded or
    a commit is under way (`shielded`)."""
    request(where, signum)
    if _state["finished"]:
        return
    if _state["shield"]:
        _state["pending"] = True
        return
    raise KeyboardInterrupt


def where() -> list[str] | None:
    """The formatted stack the first interrupt arrived in, when it was recorded."""
    return _state["where"]


def requested() -> bool:
    """Whether a stop was asked for that still counts: not once the command's result was in place."""
    return _state["requested"] and not _state["finished"]


def exit_code() -> int:
    """The shell's code for the signal that stopped the command: 130 for SIGINT, 143 SIGTERM, 129 SIGHUP."""
    return 128 + int(_state["signal"] or signal.SIGINT)


def check() -> None:
    """Raise KeyboardInterrupt when an interrupt was requested (and perhaps swallowed on its way up)."""
    if requested():
        raise KeyboardInterrupt


@contextmanager
def shielded() -> Iterator[None]:
    """Let the renames inside run to their end: an interrupt arriving meanwhile is raised when the block ends,
    unless the block finished the command (`placed` of its final output)."""
    _state["shield"] += 1
    try:
        yield
    finally:
        _state["shield"] -= 1
    if not _state["shield"] and _state["pending"]:
        _state["pending"] = False
        check()


def final_output(path: Path | str | None) -> None:
    """Name the path whose placing completes the command (the CLI does, before calling the library)."""
    _state["final"] = None if path is None else os.path.abspath(path)


def placed(path: Path | str) -> None:
    """`path` is now in place; when it is the command's final output, the command has succeeded."""
    if _state["final"] is not None and os.path.abspath(path) == _state["final"]:
        _state["finished"] = True


def finished() -> bool:
    """Whether the command's final output is in place (so it succeeds whatever arrives now)."""
    return _state["finished"]


def reset() -> None:
    """Forget earlier requests and outputs (tests that run several commands in one process)."""
    _state.update(requested=False, where=None, signal=None, finished=False, final=None, shield=0, pending=False)
