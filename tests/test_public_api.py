"""Public paths keep working: the console script, `from layerpick import ...`, every import the README's Python
API section shows, the paths it showed before the stage packages, and module paths named inside strings."""

import ast
import importlib
import re
from pathlib import Path

import pytest
import tomllib

import layerpick

ROOT = Path(__file__).resolve().parents[1]
# The README's Python API imports before the package-per-stage layout; code written against them must still run.
EARLIER_IMPORTS = [
    "from layerpick import CollectConfig, LoadOptions, collect, load_calibration, load_model",
    "from layerpick.select_run import SelectConfig, run_select",
    "from layerpick.validation import run_validation",
    "from layerpick.export import export_model",
    "from layerpick.workflow import RunConfig, run_workflow",
]


def readme_api_imports() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Python API"):]
    block = section[section.index("```python"):section.index("```", section.index("```python") + 3)]
    return [line for line in block.splitlines() if line.startswith(("from layerpick", "import layerpick"))]


def run_import(statement: str) -> None:
    namespace: dict = {}
    exec(compile(statement, "<import>", "exec"), namespace)
    names = [alias.asname or alias.name for node in ast.parse(statement).body for alias in node.names]
    assert all(namespace[name] is not None for name in names)


def test_readme_shows_imports():
    assert len(readme_api_imports()) >= 5


@pytest.mark.parametrize("statement", readme_api_imports() + EARLIER_IMPORTS)
def test_import_paths_work(statement):
    run_import(statement)


def test_every_public_name_of_the_package():
    for name in layerpick.__all__:
        assert getattr(layerpick, name) is not None, name


def test_console_script_target_exists():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["layerpick"].partition(":")
    assert callable(getattr(importlib.import_module(module), function))


def test_module_paths_named_in_strings():
    """Code that starts a subprocess names a module inside a string: those modules and names exist."""
    from layerpick.bench import memory

    for module, name in re.findall(r"from ([\w.]+) import (\w+)", memory.PROBE_CODE):
        assert callable(getattr(importlib.import_module(module), name))
