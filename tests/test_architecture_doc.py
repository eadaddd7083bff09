"""docs/architecture.md names every module, and no module that is gone.

A module is named by its path: inside `layerpick/` relative to the package (`core/models.py`, `export/onnx/graph.py`,
`errors.py` for a top-level one), or under `cli/` as `cli/app.py`; a `layerpick/...` prefix is allowed too. Every
`.py` file under `layerpick/` (not `__pycache__`, and not through the `layerpick/cli` link, which is `cli/`) and
under `cli/` must be named in the doc's "The tree" section; every module path the whole doc names must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
OTHER_TOP_FOLDERS = ("tests/", "benchmarks/", "scripts/", "docs/", ".ci/")
MODULE = re.compile(r"(?<![\w./-])((?:[A-Za-z_][\w-]*/)*[A-Za-z_]\w*\.py)(?!\w)")


def modules_on_disk() -> set[str]:
    """Every module as a repository path: `layerpick/core/models.py`, `cli/app.py`."""
    found = set()
    for top in ("layerpick", "cli"):
        for path in (ROOT / top).rglob("*.py"):
            relative = path.relative_to(ROOT)
            if "__pycache__" in relative.parts or relative.parts[:2] == ("layerpick", "cli"):
                continue
            found.add(relative.as_posix())
    return found


def named_modules(text: str) -> set[str]:
    """The module paths a text names, as repository paths; paths under the other top-level folders are not
    modules of the package (test_docs_paths checks those)."""
    named = set()
    for word in MODULE.findall(text):
        if word.startswith(OTHER_TOP_FOLDERS):
            continue
        named.add(word if word.startswith(("cli/", "layerpick/")) else f"layerpick/{word}")
    return named


def tree_section(text: str) -> str:
    start = text.index("## The tree")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


def test_named_modules_reads_paths_unambiguously():
    assert named_modules(
        "core/models.py, `cli/app.py`, errors.py and layerpick/exporting/onnx/graph.py; tests/testkit/tiny.py isn't"
    ) == {"layerpick/core/models.py", "layerpick/errors.py", "cli/app.py", "layerpick/exporting/onnx/graph.py"}
    assert "layerpick/cli/app.py" not in modules_on_disk()
    assert "cli/app.py" in modules_on_disk()


def test_the_tree_names_every_module():
    missing = sorted(modules_on_disk() - named_modules(tree_section(DOC.read_text(encoding="utf-8"))))
    assert not missing, f"docs/architecture.md's tree does not name these modules: {missing}"


def test_every_module_the_doc_names_exists():
    gone = sorted(named_modules(DOC.read_text(encoding="utf-8")) - modules_on_disk())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"
