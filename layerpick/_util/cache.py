"""Where layerpick keeps files between runs (converted GGUF models, representation stores).

`LAYERPICK_CACHE` moves it; otherwise `$XDG_CACHE_HOME/layerpick` or `~/.cache/layerpick`.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    override = os.environ.get("LAYERPICK_CACHE")
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "layerpick"
