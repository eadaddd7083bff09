"""The one place that turns exceptions into one-line messages and exit codes.

Exit codes: 0 ok, 1 user error (bad input, missing or broken model, an output location that cannot be
written, a full disk, whichever library noticed it), 2 usage (Typer/click), 3 internal error, 130 / 143 / 129
interrupted (Ctrl-C, SIGTERM, SIGHUP: 128 + the signal's number).
`LAYERPICK_DEBUG=1` shows the full traceback as well, and keeps the exit code.
"""

from __future__ import annotations

import errno
import os
import sys

from layerpick._util import disk, interrupt
from layerpick.errors import LayerpickError

USER_ERROR = 1
USAGE_ERROR = 2
INTERNAL_ERROR = 3
INTERRUPTED = 130
# OSErrors about the user's environment (their files, their disk), not about layerpick
ENVIRONMENT_ERRNOS = {
    errno.ENOENT,
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EISDIR,
    errno.ENOTDIR,
}


def debug_enabled() -> bool:
    return os.environ.get("LAYERPICK_DEBUG", "") not in ("", "0", "false")


def exit_code_for(error: BaseException) -> int:
    if isinstance(error, KeyboardInterrupt) or interrupt.requested() or _is_abort(error):
        return INTERRUPTED
    if isinstance(error, LayerpickError):
        return USER_ERROR
    if isinstance(error, OSError) and error.errno in ENVIRONMENT_ERRNOS:
        return USER_ERROR
    if disk.is_disk_full(error):  # said in a library's own words (a SafetensorError, say)
        return USER_ERROR
    return INTERNAL_ERROR


def exit_code(error: BaseException) -> int:
    """Report `error` (one line on stderr, or usage help, or a traceback under LAYERPICK_DEBUG) and return the
    exit code it stands for."""
    if isinstance(error, SystemExit):
        return error.code if isinstance(error.code, int) else (0 if error.code is None else USER_ERROR)
    code = exit_code_for(error)
    if code == INTERRUPTED:
        if debug_enabled():
            _print_traceback(error)
        return code
    if _is_usage_error(error):
        error.show()
        return USAGE_ERROR
    if debug_enabled():
        _print_traceback(error)
    return report(error)


def report(error: BaseException) -> int:
    """Print `error` as one line on stderr and return the exit code."""
    code = exit_code_for(error)
    prefix = "error" if code == USER_ERROR else f"internal error ({type(error).__name__})"
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if not isinstance(error, LayerpickError) and disk.is_disk_full(error):
        message = f"no space left on device while writing {getattr(error, 'filename', None) or 'an output'}"
    print(f"layerpick: {prefix}: {message}", file=sys.stderr)
    if code == INTERNAL_ERROR and not debug_enabled():
        print("layerpick: set LAYERPICK_DEBUG=1 to see the traceback", file=sys.stderr)
    return code


def _is_usage_error(error: BaseException) -> bool:
    from typer._click.exceptions import ClickException  # Typer bundles its own click

    return isinstance(error, ClickException)


def _is_abort(error: BaseException) -> bool:
    from typer import Abort

    return isinstance(error, Abort)


def _print_traceback(error: BaseException) -> None:
    import traceback

    traceback.print_exception(type(error), error, error.__traceback__)
