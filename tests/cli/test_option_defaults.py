"""Every CLI option that sets a config field has that field's default, so the CLI and the config dataclasses
cannot drift: the CLI takes its defaults from the dataclasses (`layerpick.cli.options.default`), and this test
reads both sides on its own (the Typer commands' parameters, the dataclasses' fields).

Each command's parameters are sorted into those mapped to a config field (checked here) and those that are not
(named, so that a new option is sorted consciously). A second test runs every command with no options and
checks that the config it hands its stage is the config's own default.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from typing import Any, Callable

import pytest
import typer
from typer.testing import CliRunner

from layerpick._util import interrupt
from layerpick.benchmark.config import BenchConfig
from layerpick.cli.app import app
from layerpick.cli.options.values import build, parse_sizes
from layerpick.comparison.run import compare_reports
from layerpick.core.collect import CollectConfig
from layerpick.core.collect_job import collect_layers
from layerpick.core.models import LoadOptions
from layerpick.exporting.config import ExportConfig
from layerpick.frontier.choice import ChoiceOptions
from layerpick.healing.config import HealConfig
from layerpick.selection.config import SelectConfig
from layerpick.serving.config import ServeConfig
from layerpick.validation.config import ValidateConfig
from layerpick.workflow.run import RunConfig


def field_default(source: Any, path: str) -> Any:
    """The default of a dataclass field (a dotted path reads into a field's default instance), or of a function's
    parameter; read here independently of `layerpick.cli.options.default`."""
    head, *rest = path.split(".")
    if dataclasses.is_dataclass(source):
        field = {f.name: f for f in dataclasses.fields(source)}[head]
        value = field.default_factory() if field.default is dataclasses.MISSING else field.default
    else:
        value = inspect.signature(source).parameters[head].default
    for name in rest:
        value = getattr(value, name)
    return value


def same(cli, field):
    return cli == field


def empty_list(cli, field):
    """A repeatable option defaults to None, which the command turns into the empty tuple."""
    return tuple(cli or ()) == field


def sizes(cli, field):
    """Batch sizes are written "1,32" on the command line."""
    return parse_sizes(cli, "--batch-sizes") == field


def bench_on(cli, field):
    """--bench/--no-bench: the run's bench config, or None."""
    return cli == (field is not None)


def progress(cli, field):
    """--quiet turns the config's progress bars off."""
    return cli == (not field)


Mapping = dict[str, tuple[Any, str, Callable[[Any, Any], bool]]]


def fields(config: Any, *names: str, check=same, **paths: str) -> Mapping:
    """parameter -> (config, field path, check): `names` are fields of the parameter's name, `paths` others."""
    return {
        **{name: (config, name, check) for name in names},
        **{name: (config, path, check) for name, path in paths.items()},
    }


LOAD = fields(
    LoadOptions,
    "revision",
    "dtype",
    "device",
    "device_map",
    "max_memory",
    "trust_remote_code",
    "allow_pickle",
    "gguf_file",
)
SELECT = {
    **fields(
        SelectConfig,
        "calibration",
        "field",
        "limit",
        "metrics",
        "rule",
        "tolerance",
        "min_speedup",
        "include_layer0",
        "prompt",
        "transform",
        "fit_texts",
        representation="collect.representation",
        pooling="collect.pooling",
        batch_size="collect.batch_size",
        max_length="collect.max_length",
        views="scoring.views",
        alpha="scoring.alpha",
        seed="scoring.seed",
    ),
    "quiet": (SelectConfig, "collect.progress", progress),
}

# command -> parameter -> (config, field, check)
MAPPED: dict[str, Mapping] = {
    "select": {**SELECT, **LOAD},
    "collect": {
        **fields(CollectConfig, "pooling", "representation", "batch_size", "max_length"),
        **fields(collect_layers, "calibration", "field", "limit", "seed", "prompt", "output"),
        "quiet": (CollectConfig, "progress", progress),
        **LOAD,
    },
    "validate": {
        **fields(
            ValidateConfig,
            "layers",
            "report",
            "normalize",
            "pooling",
            "prompt",
            "transform",
            "fit_texts",
            "field",
            "documents_by",
            "representation",
            "batch_size",
            "max_length",
            output="output_dir",
            exported="exported_dir",
            store="store_dir",
        ),
        "task_data": (ValidateConfig, "task_data", empty_list),
        "static": (ValidateConfig, "static_exports", empty_list),
        "quiet": (ValidateConfig, "progress", progress),
        **LOAD,
    },
    "export": {
        **fields(
            ExportConfig,
            "report",
            "pooling",
            "prompt",
            "transform",
            "fit_texts",
            "field",
            "normalize",
            "max_seq_length",
            "overwrite",
            "format",
            "static_dims",
            "quantize",
        ),
        "quiet": (ExportConfig, "progress", progress),
        **LOAD,
    },
    "heal": {
        **fields(
            HealConfig,
            "blocks",
            "fit_texts",
            "field",
            "pooling",
            "epochs",
            "checkpoint_minutes",
            "learning_rate",
            "batch_size",
            "seed",
            "held_out",
            "max_texts",
            "loss",
            "layers",
            "max_loss",
            "format",
            "quantize",
            "overwrite",
        ),
        "quiet": (HealConfig, "progress", progress),
        **LOAD,
    },
    "bench": {
        **fields(BenchConfig, "baseline", "texts", "repeats", "memory", "device", "threads", "backend"),
        "batch_sizes": (BenchConfig, "batch_sizes", sizes),
    },
    "serve": fields(
        ServeConfig,
        "host",
        "port",
        "max_inputs",
        "max_chars",
        "batch_size",
        "max_wait_ms",
        "device",
        "model_name",
        "strict_model",
        "threads",
        "backend",
        "drain_timeout_s",
    ),
    "compare": fields(compare_reports, "overwrite"),
    "run": {
        **SELECT,
        **LOAD,
        **fields(RunConfig, "force", "normalize", "format", "quantize"),
        **fields(BenchConfig, "threads", bench_texts="texts", bench_repeats="repeats", bench_memory="memory"),
        "tasks": (RunConfig, "tasks", empty_list),
        "task_data": (RunConfig, "task_data", empty_list),
        "static": (RunConfig, "static_exports", empty_list),
        "bench": (RunConfig, "bench", bench_on),
        "bench_batch_sizes": (BenchConfig, "batch_sizes", sizes),
    },
    "models": {},
}

# command -> the parameters that set no config field (arguments, outputs of their own, what picks the layer)
NOT_MAPPED = {
    "select": {"model", "output", "as_json"},  # output: select_and_write's; None: layerpick-out/<model>
    "collect": {"model"},
    "validate": {"model", "tasks", "materialize", "choose", "max_loss", "as_json"},  # choice: see below
    "export": {"model", "output", "layer", "layers"},
    "heal": {"model", "output", "layer", "as_json"},
    "bench": {"directory", "layers", "validation", "static", "output", "as_json", "quiet"},
    "serve": {"directory"},
    "compare": {"reports", "output", "as_json"},
    # layers: None is "selected" (RunConfig's), or "all" when choosing by validation; bench's quiet is run_bench's
    # heal_layers ("auto", "none": no heal), heal_max_loss, heal_epochs, heal_blocks: RunConfig's HealConfig unless
    # given; heal_minutes: RunConfig's budget unless given, None with --heal-epochs alone
    "run": {
        "model",
        "layers",
        "output",
        "choose",
        "max_loss",
        "as_json",
        "heal_layers",
        "heal_max_loss",
        "heal_epochs",
        "heal_blocks",
        "heal_minutes",
    },
    "models": set(),
}


def commands() -> dict:
    return typer.main.get_command(app).commands


def test_every_parameter_of_every_command_is_sorted():
    assert set(commands()) == set(MAPPED) == set(NOT_MAPPED)
    for name, command in commands().items():
        parameters = {parameter.name for parameter in command.params}
        mapped, other = set(MAPPED[name]), NOT_MAPPED[name]
        assert not mapped & other, f"{name}: {mapped & other}"
        assert parameters == mapped | other, (
            f"{name}: unsorted {sorted(parameters - mapped - other)}, gone {sorted((mapped | other) - parameters)}"
        )


@pytest.mark.parametrize(
    "command, parameter", [(command, parameter) for command, mapping in MAPPED.items() for parameter in mapping]
)
def test_each_option_has_its_config_fields_default(command, parameter):
    config, path, check = MAPPED[command][parameter]
    [option] = [p for p in commands()[command].params if p.name == parameter]
    expected = field_default(config, path)
    assert check(option.default, expected), (
        f"layerpick {command} {option.opts[0]} defaults to {option.default!r}; "
        f"{getattr(config, '__name__', config)}.{path} to {expected!r}"
    )


@pytest.mark.parametrize("command", ["validate", "run"])
def test_no_choice_options_mean_the_configs_choice(command):
    params = {p.name: p.default for p in commands()[command].params}
    expected = ValidateConfig().choice if command == "validate" else RunConfig().choice
    assert ChoiceOptions.parse(params["choose"], params["max_loss"]) == expected


# ------------------------------------------------------------- the config each command builds with no options


class Stop(Exception):
    """Raised by a stand-in for a stage: the command has handed over its config."""


@pytest.fixture
def captured(monkeypatch):
    """Runs `layerpick ARGS` with every stage replaced by a stand-in that records its arguments; returns them."""
    for name in [name for name in os.environ if name.startswith("LAYERPICK_")]:
        monkeypatch.delenv(name)
    seen: dict[str, Any] = {}

    def stand_in(*args, **kwargs):
        seen.update(args=args, kwargs=kwargs)
        raise Stop

    from layerpick import exporting, healing, selection, validation, workflow
    from layerpick.cli import bench_cmd, serve_cmd
    from layerpick.comparison import run as comparison_run
    from layerpick.core import collect_job

    for module, name in (  # where each command looks its stage up when it runs
        (selection, "select_and_write"),
        (collect_job, "collect_layers"),
        (exporting, "export_model"),
        (healing, "heal_or_sweep"),
        (bench_cmd, "run_bench"),
        (serve_cmd, "run_server"),
        (comparison_run, "compare_reports"),
        (workflow, "run_workflow"),
        (validation, "run_validation"),
    ):
        monkeypatch.setattr(module, name, stand_in)

    def run(*args: str) -> dict[str, Any]:
        interrupt.reset()
        try:
            done = CliRunner().invoke(app, list(args))
        finally:
            interrupt.reset()
        assert isinstance(done.exception, Stop), done.output
        return seen

    return run


def test_select_hands_over_the_default_configs(captured):
    model, load, selection, output = captured("select", "a-model")["args"]
    assert (model, load, selection, output) == ("a-model", LoadOptions(), SelectConfig(), None)


def test_collect_hands_over_collect_layers_defaults(captured):
    seen = captured("collect", "a-model")
    assert seen["args"] == ("a-model", LoadOptions())
    defaults = {
        name: parameter.default
        for name, parameter in inspect.signature(collect_layers).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert seen["kwargs"] == defaults


def test_validate_hands_over_the_default_config(captured):
    seen = captured("validate", "a-model", "--tasks", "STSBenchmark")
    assert seen["args"] == ("a-model", ["STSBenchmark"], ValidateConfig(tasks=("STSBenchmark",)))
    assert seen["kwargs"] == {"load_options": LoadOptions()}


def test_export_hands_over_the_default_config(captured, tmp_path):
    seen = captured("export", "a-model", "--output", str(tmp_path / "out"))
    assert seen["args"] == ("a-model", None, tmp_path / "out", ExportConfig())
    assert seen["kwargs"] == {"load_options": LoadOptions()}


def test_heal_hands_over_the_default_config(captured, tmp_path):
    seen = captured("heal", "a-model", "--output", str(tmp_path / "out"))
    assert seen["args"] == ("a-model", None, tmp_path / "out", HealConfig())
    assert seen["kwargs"] == {"load_options": LoadOptions()}


def test_bench_hands_over_the_default_config(captured):
    seen = captured("bench", "an-export")
    assert seen["args"] == ("an-export", BenchConfig())


def test_serve_hands_over_the_default_config(captured, tmp_path):
    seen = captured("serve", str(tmp_path))
    assert seen["args"] == (tmp_path, ServeConfig())


def test_compare_hands_over_the_default_overwrite(captured, tmp_path):
    seen = captured("compare", str(tmp_path))
    assert seen["kwargs"] == {"overwrite": field_default(compare_reports, "overwrite")}


def test_run_hands_over_the_default_configs(captured):
    seen = captured("run", "a-model")
    model, _, load, config = seen["args"]
    assert (model, load, config) == ("a-model", LoadOptions(), RunConfig())


def test_build_hands_over_the_parameters_named_as_fields():
    from layerpick.serving.config import ServeConfig

    parameters = {"port": 9000, "batch_size": 4, "directory": "x", "as_json": True}
    config = build(ServeConfig, parameters, batch_size=8)
    assert (config.port, config.batch_size, config.host) == (9000, 8, field_default(ServeConfig, "host"))

    def function(model, *, limit=3, seed=0):
        return model, limit, seed

    assert build(function, {"limit": 5, "quiet": True}, model="m") == ("m", 5, 0)
