"""The optional extras of pyproject.toml (`pip install 'layerpick[NAME]'`): which of an extra's packages are
missing, said in one line by whatever needs them (`export --format onnx`, `--format static`, ONNX backends)."""

from __future__ import annotations

import importlib.util
from typing import Sequence


def missing_extra(extra: str, packages: Sequence[str], purpose: str) -> str | None:
    """The one-line message naming what to install when any of `packages` (of the extra `extra`) is missing, else
    None; `purpose` names what needs them (`--format static`)."""
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return f"{purpose} needs the optional extra: pip install 'layerpick[{extra}]' (missing: {', '.join(missing)})"
