"""A package's public names imported on first use (PEP 562), so that importing one light submodule (a config, a
result document) does not import torch, scipy or mteb through the package's `__init__`.

    __all__, __getattr__, __dir__ = lazy_names(__name__, config="HealConfig", job="HealError heal_model")

(each keyword a submodule, its value the names it holds), or `lazy_names(__name__, homes)` with `homes` mapping
each name to its submodule or to an absolute module name.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the CLI's first moments count)
if TYPE_CHECKING:
    from typing import Callable


def lazy_names(
    package: str, homes: dict[str, str] | None = None, **modules: str
) -> tuple[list[str], Callable[[str], object], Callable[[], list[str]]]:
    """The `__all__`, `__getattr__` and `__dir__` of `package`: each name is read from its module on first use
    and kept in the package's namespace, so the import happens once."""
    homes = {**(homes or {}), **{name: module for module, names in modules.items() for name in names.split()}}
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

    return sorted(homes), __getattr__, __dir__
