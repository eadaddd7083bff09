"""Whole numbers as users and peers write them: ASCII digits only.

`str.isdigit` accepts superscripts ('²') that `int` then refuses with a ValueError, and `int` accepts other
scripts' digits ('٣'), underscores ('1_0') and surrounding spaces. Options, file names and protocol headers take
none of those: every place that reads a number from text asks here.
"""

import re

_UNSIGNED = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"-?[0-9]+")


def is_ascii_number(text: str) -> bool:
    """Whether `text` is one or more ASCII digits and nothing else."""
    return _UNSIGNED.fullmatch(text) is not None


def ascii_int(text: str) -> int | None:
    """The integer `text` writes with ASCII digits and an optional leading '-', or None for anything else."""
    return int(text) if _SIGNED.fullmatch(text) else None
