"""The option groups a decorator adds to a command and hands over as one typed value: the model-loading options of
every command that loads a model (`with_load_options` -> `load: LoadOptions`), the scoring and selection options of
`select` and `run` (`with_select_options` -> `selection: SelectConfig`), and --choose and --max-loss of `validate`
and `run` (`with_choice_options` -> `choice: ChoiceOptions`). Each option's default is its config field's.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any, Callable

from layerpick.cli.options import aliases
from layerpick.cli.options.values import default
from layerpick.core.load_options import LoadOptions
from layerpick.frontier.choice import ChoiceOptions
from layerpick.selection.config import SelectConfig


# parameter -> option: how every model-loading command loads its model (each a `LoadOptions` field of that name)
LOAD_ALIASES = {
    "revision": aliases.Revision,
    "dtype": aliases.Dtype,
    "device": aliases.Device,
    "device_map": aliases.DeviceMap,
    "max_memory": aliases.MaxMemory,
    "trust_remote_code": aliases.TrustRemoteCode,
    "allow_pickle": aliases.AllowPickle,
    "gguf_file": aliases.GgufFile,
}
LOAD_OPTIONS = {name: (option, default(LoadOptions, name)) for name, option in LOAD_ALIASES.items()}


def _option_group(parameter: str, options: dict, build: Callable[[dict, dict], Any]) -> Callable:
    """A decorator that gives a command the `options` (after its own) and hands it `build(values, own values)` as
    the one argument `parameter`."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != parameter]
        added = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value, annotation=annotation)
            for name, (annotation, value) in options.items()
        ]

        @functools.wraps(command)
        def wrapper(**kwargs):
            values = {name: kwargs.pop(name) for name in options}
            return command(**kwargs, **{parameter: build(values, kwargs)})

        wrapper.__signature__ = signature.replace(parameters=[*own, *added])
        return wrapper

    return decorate


SELECT_FIELDS = {  # parameter -> (option, its SelectConfig field): how `select` and `run` score layers and choose
    "calibration": (aliases.Calibration, "calibration"),
    "field": (aliases.Field, "field"),
    "limit": (aliases.Limit, "limit"),
    "metrics": (aliases.Metrics, "metrics"),
    "rule": (aliases.Rule, "rule"),
    "tolerance": (aliases.Tolerance, "tolerance"),
    "min_speedup": (aliases.MinSpeedup, "min_speedup"),
    "include_layer0": (aliases.IncludeLayer0, "include_layer0"),
    "representation": (aliases.Representation, "collect.representation"),
    "pooling": (aliases.Pooling, "collect.pooling"),
    "batch_size": (aliases.BatchSize, "collect.batch_size"),
    "max_length": (aliases.MaxLength, "collect.max_length"),
    "views": (aliases.Views, "scoring.views"),
    "alpha": (aliases.Alpha, "scoring.alpha"),
    "seed": (aliases.Seed, "scoring.seed"),
    "prompt": (aliases.Prompt, "prompt"),
    "transform": (aliases.Transform, "transform"),
    "fit_texts": (aliases.FitTexts, "fit_texts"),
}
SELECT_OPTIONS = {name: (option, default(SelectConfig, path)) for name, (option, path) in SELECT_FIELDS.items()}


def select_config(values: dict, progress: bool) -> SelectConfig:
    """The `SelectConfig` of the SELECT_FIELDS' values (what they leave out: `SelectConfig()`'s)."""
    collect = dataclasses.replace(
        default(SelectConfig, "collect"),
        pooling=values["pooling"],
        representation=values["representation"],
        batch_size=values["batch_size"],
        max_length=values["max_length"],
        progress=progress,
    )
    scoring = dataclasses.replace(
        default(SelectConfig, "scoring"), alpha=values["alpha"], views=values["views"], seed=values["seed"]
    )
    return SelectConfig(
        calibration=values["calibration"],
        field=values["field"],
        limit=values["limit"],
        metrics=values["metrics"],
        rule=values["rule"],
        tolerance=values["tolerance"],
        min_speedup=values["min_speedup"],
        include_layer0=values["include_layer0"],
        collect=collect,
        scoring=scoring,
        prompt=values["prompt"],
        transform=values["transform"],
        fit_texts=values["fit_texts"],
    )


# --choose and --max-loss of `validate` and `run`, handed over as one `choice: ChoiceOptions`.
with_choice_options = _option_group(
    "choice",
    {"choose": (aliases.Choose, None), "max_loss": (aliases.MaxLoss, None)},
    lambda values, own: ChoiceOptions.parse(values["choose"], values["max_loss"]),
)
# The model-loading options of every command that loads a model, handed over as one `load: LoadOptions`.
with_load_options = _option_group("load", LOAD_OPTIONS, lambda values, own: LoadOptions(**values))
# The scoring and selection options of `select` and `run`, handed over as one `selection: SelectConfig` (progress
# bars follow the command's own `quiet`).
with_select_options = _option_group(
    "selection", SELECT_OPTIONS, lambda values, own: select_config(values, progress=not own.get("quiet", False))
)
