"""The one place that turns exceptions into one-line messages and exit codes.

Exit codes: 0 ok, 1 user error (bad input, missing model), 2 usage (Typer/click), 3 internal error.
`LAYERPICK_DEBUG=1` shows the full traceback instead.
"""

from __future__ import annotations

import os
import sys

from layerpick.errors import LayerpickError

USER_ERROR = 1
INTERNAL_ERROR = 3


def debug_enabled() -> bool:
    return os.environ.get("LAYERPICK_DEBUG", "") not in ("", "0", "false")


def exit_code_for(error: BaseException) -> int:
    if isinstance(error, (LayerpickError, FileNotFoundError, PermissionError)):
        return USER_ERROR
    return INTERNAL_ERROR


def report(error: BaseException) -> int:
    """Print `error` as one line on stderr and return the exit code."""
    code = exit_code_for(error)
    prefix = "error" if code == USER_ERROR else f"internal error ({type(error).__name__})"
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    print(f"layerpick: {prefix}: {message}", file=sys.stderr)
    if code == INTERNAL_ERROR:
        print("layerpick: set LAYERPICK_DEBUG=1 to see the traceback", file=sys.stderr)
    return code
