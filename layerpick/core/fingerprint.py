"""A model's content fingerprint: what `run` keys its stages on beside the model's name, so that weights, a config
or a tokenizer changed in place give a new key and the stages run again instead of handing back stale outputs.

Cheap on purpose (it runs before every `run`): for a local folder or file, every file's relative name, size and
modification time, and the bytes of the small files (configs, tokenizers); for a registry alias, its package's
installed version; for a hub id, nothing more (its `--revision` is in the load options that the keys hold).

`same_place` names a source as every key does: a path that exists, absolute (typed relative or absolute, it is
the same run). `texts_fingerprint` is the same for a text source (a file or a task folder), from every byte: texts
are read whole anyway, and a file rewritten with the same size and time (a copy that keeps times, a checkout) is
other texts.
"""

from __future__ import annotations

import hashlib
import os
from importlib import metadata
from pathlib import Path

from layerpick.core import registry

SMALL_FILE_BYTES = 4 * 2**20  # files up to this size are hashed whole: configs, tokenizers, modules.json


def model_fingerprint(model: str) -> str:
    """A short hash of what `model` names: its files' names, sizes, times and small files' bytes (a local path),
    its package and version (an alias), or the name itself (a hub id)."""
    digest = hashlib.sha256()
    path = Path(model).expanduser()
    if path.exists():
        for name, file in _files(path):
            status = file.stat()
            digest.update(f"{name}\0{status.st_size}\0{status.st_mtime_ns}\0".encode())
            if status.st_size <= SMALL_FILE_BYTES:
                digest.update(file.read_bytes())
    elif (entry := registry.get_entry(model)) is not None:
        digest.update(f"{entry.package}\0{_installed_version(entry.package)}".encode())
    else:
        digest.update(model.encode())
    return digest.hexdigest()[:16]


def texts_fingerprint(source: str | None) -> str | None:
    """The sha256 of a text source's content: a file's bytes, or a folder's files' names and bytes (hidden files
    left out); None for the embedded set (None) or what is not a file or folder (a stream, which is not re-read)."""
    if source is None:
        return None
    path = Path(source).expanduser()
    if not (path.is_file() or path.is_dir()):
        return None
    digest = hashlib.sha256()
    for name, file in _files(path):
        digest.update(f"{name}\0{file.stat().st_size}\0".encode())
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _files(path: Path) -> list[tuple[str, Path]]:
    """(name relative to `path`, file) for a file, or for every file under a folder but hidden ones (a `.cache`,
    a `.git`), in a fixed order."""
    if path.is_file():
        return [(path.name, path)]
    found = [file for file in path.rglob("*") if file.is_file()]
    named = [(file.relative_to(path).as_posix(), file) for file in found]
    return sorted((name, file) for name, file in named if not any(part.startswith(".") for part in name.split("/")))


def _installed_version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def same_place(name: str) -> str:
    """A model or text source as a run key names it: a path that exists as an absolute path (so `out` and `./out`,
    or a relative and an absolute model path, resume the same run), anything else (an alias, a hub id) as given."""
    path = Path(name).expanduser()
    return os.path.abspath(path) if path.exists() else name
