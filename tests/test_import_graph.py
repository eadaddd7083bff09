"""The package's import graph, read from the source: the neutral rooms import no stage, the stages import each
other only forward (select, export, heal, validate, bench and serve, compare, run) and only through a sibling's public
face (its package, `config`, `result`, `metadata`, `load`, `render`, `report`), never its internals."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "layerpick"
# The stages in the order they build on each other: a stage may import only stages before it.
STAGES = ("selection", "exporting", "healing", "validation", "benchmark", "serving", "comparison", "workflow")
NEUTRAL = ("core", "metrics", "frontier", "_util", "errors", "data")  # shared rooms: they import no stage
# What a stage shows its siblings: its package (verbs and types), its config and result (the file's document),
# export's metadata and load (an export read back), and the renderers of its result (render: the terminal,
# report: the files).
PUBLIC = ("", "config", "result", "metadata", "load", "render", "report")


def imports_of(path: Path) -> list[str]:
    """Every absolute `layerpick.*` module a file imports, at the top or inside a function."""
    modules = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules += [
                f"{node.module}.{alias.name}" if is_module(f"{node.module}.{alias.name}") else node.module
                for alias in node.names
            ]
        elif isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
    return [module for module in modules if module.split(".")[0] == "layerpick"]


def is_module(dotted: str) -> bool:
    """Whether `layerpick.x.y` names a module or package of the source tree (not a name defined in one)."""
    path = ROOT.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def edges() -> list[tuple[str, str, str]]:
    """(file, the room it is in, the module it imports) for every import from one room into another."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if "__pycache__" in path.parts or path.relative_to(ROOT).parts[0] == "cli":
            continue
        room = path.relative_to(ROOT).with_suffix("").parts[0]
        for module in imports_of(path):
            parts = module.split(".")
            if len(parts) > 1 and parts[1] != room:
                found.append((str(path.relative_to(ROOT.parent)), room, module))
    return found


def test_the_graph_is_read():
    rooms = {(room, module.split(".")[1]) for _, room, module in edges()}
    assert ("workflow", "selection") in rooms and ("selection", "core") in rooms  # the reader sees real edges


def test_the_neutral_rooms_import_no_stage():
    wrong = [(path, module) for path, room, module in edges() if room in NEUTRAL and module.split(".")[1] in STAGES]
    assert wrong == []


def test_stages_import_only_earlier_stages():
    wrong = [
        (path, module)
        for path, room, module in edges()
        if room in STAGES and module.split(".")[1] in STAGES and STAGES.index(module.split(".")[1]) > STAGES.index(room)
    ]
    assert wrong == []


def test_stages_import_a_sibling_only_through_its_public_modules():
    wrong = [
        (path, module)
        for path, room, module in edges()
        if room in STAGES and module.split(".")[1] in STAGES and (module.split(".") + [""])[2] not in PUBLIC
    ]
    assert wrong == []


def test_every_stage_has_a_public_face():
    for stage in STAGES:
        assert (ROOT / stage / "__init__.py").is_file(), stage
