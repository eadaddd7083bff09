"""Public paths keep working: the console script, `from layerpick import ...`, one verb per stage with one
argument pattern, every import the README's Python API section shows, and module paths named inside strings."""

import ast
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

import layerpick

ROOT = Path(__file__).resolve().parents[1]
VERBS = ("select", "validate", "export", "heal", "bench", "run", "compare", "serve")
CONFIGS = {
    "select": "SelectConfig",
    "validate": "ValidateConfig",
    "export": "ExportConfig",
    "heal": "HealConfig",
    "bench": "BenchConfig",
    "run": "RunConfig",
    "serve": "ServeConfig",
}  # compare has no settings beyond its inputs and output
KEYWORDS = {"load", "output", "overwrite", "progress"}


def readme_api_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Python API") :]
    section = section[: section.index("\n## ", 3)]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def readme_api_imports() -> list[str]:
    return [
        line
        for block in readme_api_blocks()
        for line in block.splitlines()
        if line.startswith(("from layerpick", "import layerpick"))
    ]


def run_import(statement: str) -> None:
    namespace: dict = {}
    exec(compile(statement, "<import>", "exec"), namespace)
    names = [alias.asname or alias.name for node in ast.parse(statement).body for alias in node.names]
    assert all(namespace[name] is not None for name in names)


def test_readme_shows_imports():
    assert len(readme_api_imports()) >= 3


def test_readme_shows_the_verbs_first():
    first = readme_api_blocks()[0]
    for verb in VERBS:
        if verb != "serve":  # serve blocks until stopped: the section names it in words
            assert re.search(rf"\b{verb}\(", first), verb


@pytest.mark.parametrize("statement", readme_api_imports())
def test_import_paths_work(statement):
    run_import(statement)


@pytest.mark.parametrize("verb", VERBS)
def test_one_verb_per_stage_with_one_argument_pattern(verb):
    """What is worked on, then the stage's config; everything else keyword-only, with the same names everywhere."""
    from layerpick import verbs

    function = getattr(verbs, verb)
    assert function.__module__ == "layerpick.verbs" and verb in verbs.__all__
    assert verb in layerpick.__all__ and getattr(layerpick, verb) is function
    parameters = list(inspect.signature(function).parameters.values())
    positional = [p for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    keywords = {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}
    assert len(positional) == (2 if verb in CONFIGS else 1), positional
    if verb in CONFIGS:
        assert positional[1].name == "config" and CONFIGS[verb] in str(positional[1].annotation)
        assert getattr(layerpick, CONFIGS[verb]).__name__ == CONFIGS[verb]
    assert keywords <= KEYWORDS, keywords - KEYWORDS
    if verb != "serve":
        assert "output" in keywords
    assert len(parameters) == len(positional) + len(keywords)


def test_the_verbs_do_not_import_torch():
    code = "import sys, layerpick as lp; lp.select, lp.export, lp.bench, lp.serve; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_public_name_of_the_package():
    for name in layerpick.__all__:
        assert getattr(layerpick, name) is not None, name


def test_console_script_target_exists():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["layerpick"].partition(":")
    assert callable(getattr(importlib.import_module(module), function))


def test_module_paths_named_in_strings():
    """Code that starts a subprocess names a module inside a string: those modules and names exist."""
    from layerpick.benchmark import memory

    for module, name in re.findall(r"from ([\w.]+) import (\w+)", memory.PROBE_CODE):
        assert callable(getattr(importlib.import_module(module), name))


def test_importing_a_stage_package_keeps_its_verb():
    """No stage package takes a verb's name: importing one leaves `layerpick.<verb>` the verb."""
    code = (
        "import layerpick, layerpick.exporting.config, layerpick.benchmark.config, layerpick.comparison.result, "
        "layerpick.serving.config; from layerpick import verbs; "
        "assert all(getattr(layerpick, v) is getattr(verbs, v) for v in verbs.__all__)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
