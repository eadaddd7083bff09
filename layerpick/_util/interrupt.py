"""Whether the user asked to stop (Ctrl-C), remembered even when a library swallowed the KeyboardInterrupt.

Owns one process-wide flag. The CLI's SIGINT handler calls `request()` and raises KeyboardInterrupt; code
about to make a result visible (the atomic writers in `layerpick._util.atomic`) calls `check()`, so an
interrupt that some library caught and ignored still stops the command before anything is committed.
"""

from __future__ import annotations

_state: dict = {"requested": False, "where": None}  # set from a signal handler, which runs in the main thread


def request(where: list[str] | None = None) -> None:
    """Remember that the user asked to stop (and, for debugging, the stack it arrived in)."""
    _state["requested"] = True
    _state["where"] = _state["where"] or where


def where() -> list[str] | None:
    """The formatted stack the first interrupt arrived in, when it was recorded."""
    return _state["where"]


def requested() -> bool:
    return _state["requested"]


def check() -> None:
    """Raise KeyboardInterrupt when an interrupt was requested (and perhaps swallowed on its way up)."""
    if _state["requested"]:
        raise KeyboardInterrupt


def reset() -> None:
    """Forget an earlier request (tests that run several commands in one process)."""
    _state["requested"] = False
    _state["where"] = None
