"""A package's public names imported on first use (PEP 562), so that importing one light submodule (a config, a
result document) does not import torch, scipy or mteb through the package's `__init__`.

    _HOMES = {"HealConfig": "config", "heal_model": "job"}     # name -> submodule (or an absolute module name)
    __all__ = sorted(_HOMES)
    __getattr__, __dir__ = lazy_names(__name__, _HOMES)
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the CLI's first moments count)
if TYPE_CHECKING:
    from typing import Callable


def lazy_names(package: str, homes: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`: each name in `homes` is read from its module on first use
    and kept in the package's namespace, so the import happens once."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = home if "." in home else f"{package}.{home}"
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
