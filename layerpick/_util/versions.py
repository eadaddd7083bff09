"""Versions of the libraries that shape layerpick's numbers, for every JSON artifact."""

from __future__ import annotations

import platform
from importlib import metadata

LIBRARIES = ("layerpick", "torch", "transformers", "sentence-transformers", "mteb")


def library_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions
