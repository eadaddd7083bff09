"""The Python verbs' door (`layerpick.verbs`): what a caller passes where a path, a list or a config goes, turned
into what the stages take, or refused in one line before any work.

A path is a `str` or an `os.PathLike` (a `pathlib.Path`); where a list goes, one item alone is a list of one (a
string is never taken apart into characters); a config None is that config's defaults. Config fields that hold
paths are converted the same way (`with_paths`), so `ExportConfig(fit_texts=Path(...))` works as a string does.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Iterable, TypeVar

from layerpick.errors import ArgumentError

Config = TypeVar("Config")


def path_text(value: Any, what: str) -> str:
    """`value` as the string of a path: a `str` as it is, an `os.PathLike` by `os.fspath`."""
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        if isinstance(text, str):
            return text
    raise ArgumentError(f"{what} must be a path (a str or an os.PathLike), not {type(value).__name__}")


def path_list(value: Any, what: str) -> tuple[str, ...]:
    """`value` as a tuple of path strings: one path alone, or an iterable of them."""
    if isinstance(value, (str, os.PathLike)):
        return (path_text(value, what),)
    if isinstance(value, (bytes, dict)) or not isinstance(value, Iterable):
        raise ArgumentError(f"{what} must be a path or a list of paths, not {type(value).__name__}")
    return tuple(path_text(item, f"each of {what}") for item in value)


def config_or_default(config: Config | None, kind: type[Config], what: str) -> Config:
    """`config`, or `kind()` (its defaults) for None; anything else is refused."""
    if config is None:
        return kind()
    if not isinstance(config, kind):
        raise ArgumentError(f"{what} must be {kind.__name__} or None, not {type(config).__name__}")
    return config


def with_paths(
    config: Config,
    *,
    texts: Iterable[str] = (),
    paths: Iterable[str] = (),
    text_lists: Iterable[str] = (),
    path_lists: Iterable[str] = (),
) -> Config:
    """`config` with its path fields converted: `texts` to str, `paths` to Path (None stays None), `text_lists`
    to tuples of str and `path_lists` to tuples of Path; a field of the wrong type is refused by its name."""
    kind = type(config).__name__
    changes: dict[str, Any] = {}
    for name in texts:
        if (value := getattr(config, name)) is not None:
            changes[name] = path_text(value, f"{kind}.{name}")
    for name in paths:
        if (value := getattr(config, name)) is not None:
            changes[name] = Path(path_text(value, f"{kind}.{name}"))
    for name in text_lists:
        changes[name] = path_list(getattr(config, name), f"{kind}.{name}")
    for name in path_lists:
        changes[name] = tuple(Path(item) for item in path_list(getattr(config, name), f"{kind}.{name}"))
    return dataclasses.replace(config, **changes)
