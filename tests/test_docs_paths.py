"""Every repository path the README and docs/ name in backticks exists (a doc that names a moved or deleted file
fails here, not in a reader's hands)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP_FOLDERS = ("layerpick", "cli", "tests", "benchmarks", "docs", "scripts", ".ci")
TOP_FILES = ("pyproject.toml", "constraints.txt", "README.md")
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def named_paths(text: str) -> list[str]:
    """The repository paths among a document's backticked words: under a top-level folder, or a top-level file;
    a `path:line` or `path::test` suffix is dropped; patterns and placeholders are not paths."""
    paths = []
    for word in re.findall(r"`([^`\s]+)`", text):
        path = re.split(r"::|:(?=\d)", word)[0].rstrip(".,")
        if any(mark in path for mark in "*<>{}[]$"):
            continue
        if (path.split("/")[0] in TOP_FOLDERS and "/" in path) or path in TOP_FILES:
            paths.append(path)
    return paths


def test_the_documents_name_paths_at_all():
    assert len(named_paths((ROOT / "README.md").read_text())) >= 20
    assert named_paths("see `layerpick/core/surgery.py:12`, `tests/x.py::test_y`, `layerpick-out/m` and `*.md`") == [
        "layerpick/core/surgery.py",
        "tests/x.py",
    ]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_named_path_exists(document):
    missing = sorted({p for p in named_paths(document.read_text()) if not (ROOT / p).exists()})
    assert not missing, f"{document.name} names paths that do not exist: {missing}"
