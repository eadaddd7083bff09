"""The package's import graph, read from the source: the neutral rooms import no stage, the stages import each
other only forward (select, export, heal, validate, bench and serve, compare, run) and only through a sibling's public
face (its package, `config`, `result`, `metadata`, `load`, `render`, `report`), never its internals; and no module of
`layerpick/` or `cli/` reaches itself again through its imports (no import circle)."""

import ast
from functools import cache
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
    """Every absolute `layerpick.*` module a file imports, at the top, inside a function or for type checking."""
    return imports_of_tree(ast.parse(path.read_text(encoding="utf-8")))


def runtime_imports_of(path: Path) -> list[str]:
    """Every absolute `layerpick.*` module a file imports when it runs: at the top or inside a function, not in an
    `if TYPE_CHECKING:` block (those are for the type checker alone and never execute)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    return imports_of_tree(tree)


def imports_of_tree(tree: ast.AST) -> list[str]:
    modules = []
    for node in ast.walk(tree):
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


@cache
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


# The import circles being broken now, each a set of modules (or a package prefix ending in "."): a circle passes
# only inside one entry. This list only shrinks: delete an entry when its circle is gone (a test says when).
KNOWN_CIRCLES: tuple[set[str] | str, ...] = ()


@cache
def module_graph() -> dict[str, set[str]]:
    """module -> the `layerpick.*` modules it imports when it runs, over `layerpick/` and `cli/` (`layerpick.cli`)."""
    graph: dict[str, set[str]] = {}
    for base, package in ((ROOT, "layerpick"), (ROOT / "cli", "layerpick.cli")):
        for path in sorted(base.resolve().rglob("*.py")):
            if "__pycache__" in path.parts or (package == "layerpick" and path.relative_to(ROOT).parts[0] == "cli"):
                continue
            parts = path.relative_to(base.resolve()).with_suffix("").parts
            name = ".".join((package, *parts[: -1 if parts[-1] == "__init__" else None]))
            graph[name] = set(runtime_imports_of(path)) - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in graph), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def known(circle: set[str], entry: set[str] | str) -> bool:
    return all(m.startswith(entry) for m in circle) if isinstance(entry, str) else circle <= entry


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert circles(graph) == [{"a", "b", "c"}]
    graph = module_graph()  # the real graph holds the CLI's modules and the imports inside functions
    assert "layerpick.cli.app" in graph and "layerpick.validation.run" in graph["layerpick.verbs"]


def test_no_new_import_circle():
    new = [sorted(circle) for circle in circles(module_graph()) if not any(known(circle, e) for e in KNOWN_CIRCLES)]
    assert new == [], "an import circle: move the shared name down, or pass a callback instead of importing back"


def test_the_known_circles_are_still_there():
    """An entry of KNOWN_CIRCLES whose circle is gone is deleted, so the list only shrinks."""
    found = circles(module_graph())
    gone = [entry for entry in KNOWN_CIRCLES if not any(known(circle, entry) for circle in found)]
    assert gone == [], f"these circles are broken: delete them from KNOWN_CIRCLES in {Path(__file__).name}"
