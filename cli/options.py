"""Option aliases shared by the commands (`Annotated` types), each also read from a LAYERPICK_* variable."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from layerpick.core.collect import CollectConfig
from layerpick.core.models import LoadOptions
from layerpick.core.prompts import BUILTIN_TEMPLATES, DEFAULT_PROMPT
from layerpick.core.transform import DEFAULT_TRANSFORM
from layerpick.selection.job import ALL_METRICS, DEFAULT_LIMIT, SelectConfig
from layerpick.selection.rules import DEFAULT_RULE
from layerpick.selection.scoring import DEFAULT_VIEWS, ScoringConfig

ModelArg = Annotated[
    Optional[str],
    typer.Argument(help="Registry alias, local directory, .gguf file or hub id.", envvar="LAYERPICK_MODEL",
                   show_default="smollm2-135m"),
]
Revision = Annotated[Optional[str], typer.Option(help="Hub revision (branch, tag or commit).", envvar="LAYERPICK_REVISION")]
Dtype = Annotated[str, typer.Option(help="float32, bfloat16 or float16.", envvar="LAYERPICK_DTYPE")]
Device = Annotated[str, typer.Option(help="cpu, cuda, mps or auto (the GPU when there is one, else the CPU).",
                                     envvar="LAYERPICK_DEVICE")]
DeviceMap = Annotated[
    Optional[str], typer.Option("--device-map", help="'auto' spreads a large model over devices (accelerate).",
                                envvar="LAYERPICK_DEVICE_MAP")
]
MaxMemory = Annotated[
    Optional[str], typer.Option("--max-memory", help="With --device-map: the most each device may hold, e.g. "
                                "0=20GiB,1=20GiB,cpu=64GiB (GPU index or cpu, mps, disk; the rest is offloaded).",
                                envvar="LAYERPICK_MAX_MEMORY")
]
TrustRemoteCode = Annotated[bool, typer.Option("--trust-remote-code", help="Run the model repository's own code.",
                                               envvar="LAYERPICK_TRUST_REMOTE_CODE")]
AllowPickle = Annotated[bool, typer.Option("--allow-pickle", help="Also load pickle (.bin) weights.")]
GgufFile = Annotated[Optional[str], typer.Option("--gguf-file", help="GGUF file name inside the model directory.")]

Calibration = Annotated[
    Optional[str],
    typer.Option(help="Text file (one per line), JSONL file, task folder, or a pipe (<(cmd), /dev/stdin: lines, "
                      "or JSONL with --field). Default: the embedded set.",
                 envvar="LAYERPICK_CALIBRATION"),
]
Field = Annotated[Optional[str], typer.Option(help="JSONL field holding the text (default 'text').",
                                              envvar="LAYERPICK_FIELD")]
Limit = Annotated[Optional[int], typer.Option(help="Use a seeded sample of N texts (a number above the set's size "
                                                   "keeps every text).", envvar="LAYERPICK_LIMIT")]
Seed = Annotated[int, typer.Option(help="Seed for sampling and augmentations.", envvar="LAYERPICK_SEED")]
BatchSize = Annotated[int, typer.Option(help="Texts per forward batch.", envvar="LAYERPICK_BATCH_SIZE")]
MaxLength = Annotated[int, typer.Option(help="Truncate texts to this many tokens.", envvar="LAYERPICK_MAX_LENGTH")]
Pooling = Annotated[Optional[str], typer.Option(help="mean, lasttoken or cls (default: the family's; lasttoken with a prompt template).",
                                                envvar="LAYERPICK_POOLING")]
Representation = Annotated[
    str, typer.Option(help="'exported' (what the cut model outputs) or 'raw' (residual stream; research only).",
                      envvar="LAYERPICK_REPRESENTATION")
]
Metrics = Annotated[str, typer.Option(help="Comma-separated metrics to compute.", envvar="LAYERPICK_METRICS")]
Rule = Annotated[str, typer.Option(help="min-<metric>, max-<metric> or rank:<rule>,<rule>,...", envvar="LAYERPICK_RULE")]
Tolerance = Annotated[float, typer.Option(help="Take the smallest layer within this fraction of the rule's best "
                                          "(0 = the best; trades quality for speed).")]
MinSpeedup = Annotated[Optional[float], typer.Option(
    "--min-speedup", help="Only layers with at least this ideal speed-up over the full model are candidates "
    "(e.g. 3); applied before --tolerance.", envvar="LAYERPICK_MIN_SPEEDUP")]
Choose = Annotated[Optional[str], typer.Option(
    "--choose", help="Which layer to export with tasks: 'unsupervised' (the rule's pick, the default) or "
    "'validated' (the best validated mean score).", envvar="LAYERPICK_CHOOSE")]
MaxLoss = Annotated[Optional[str], typer.Option(
    "--max-loss", help="Export the shallowest layer whose validated mean score is within this absolute loss of "
    "the best layer's (e.g. 0.01); needs tasks.", envvar="LAYERPICK_MAX_LOSS")]
IncludeLayer0 = Annotated[bool, typer.Option("--include-layer0", help="Let the embeddings (layer 0) win.")]
Alpha = Annotated[float, typer.Option(help="Renyi order of the matrix entropies (1 = von Neumann).")]
Views = Annotated[int, typer.Option(help="Augmented views per text for dime/infonce (2) and lidar (all).",
                                    envvar="LAYERPICK_VIEWS")]
PROMPT_HELP = ("a built-in name (" + ", ".join(f"{name}: {template}" for name, template in BUILTIN_TEMPLATES.items())
               + "), none (plain text), or a template with one {text}")
Prompt = Annotated[Optional[str], typer.Option(
    "--prompt", help=f"Prompt template each text is wrapped in: {PROMPT_HELP}. With a template, last-token pooling is the default. Default: none (export: the report's).",
    envvar="LAYERPICK_PROMPT")]
Prompts = Annotated[Optional[str], typer.Option(
    "--prompt", help=f"Prompt template each text is wrapped in: {PROMPT_HELP}; or several names, comma-separated "
    "(none,eol,sum), to score every (template, layer) pair. With a template, last-token pooling is the default. "
    f"Default: {DEFAULT_PROMPT}.", envvar="LAYERPICK_PROMPT")]
TRANSFORM_HELP = ("auto (none for a trained sentence embedder; for other models none and whiten-256 side by "
                  "side, the rule choosing), none, center, whiten (every direction the fit set supports), whiten-D (the top D principal "
                  "directions, unit variance), abtt or abtt-K (remove the mean and the top K directions)")
Transform = Annotated[Optional[str], typer.Option(
    "--transform", help=f"Post-pooling transform, fitted at the layer on the fit texts and shipped as a Dense module: "
    f"{TRANSFORM_HELP}. Default: none (with --report: the report's).", envvar="LAYERPICK_TRANSFORM")]
Transforms = Annotated[Optional[str], typer.Option(
    "--transform", help=f"Post-pooling transform fitted per layer on the fit texts: {TRANSFORM_HELP}; or several, "
    f"comma-separated (none,whiten-256), to score every (transform, layer) pair side by side. Default: "
    f"{DEFAULT_TRANSFORM}.", envvar="LAYERPICK_TRANSFORM")]
FitTexts = Annotated[Optional[str], typer.Option(
    "--fit-texts", help="Unlabelled texts the transform is fitted on (a text file, JSONL or task folder, e.g. the "
    "documents you will embed). Default: the calibration set (every text of it).", envvar="LAYERPICK_FIT_TEXTS")]
Output = Annotated[Optional[Path], typer.Option(help="Output directory.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.", envvar="LAYERPICK_QUIET")]
Threads = Annotated[Optional[int], typer.Option(min=1, help="Torch intra-op CPU threads (default: torch's own).",
                                                envvar="LAYERPICK_THREADS")]


LOAD_OPTIONS = {  # parameter -> (option, default): how every model-loading command loads its model
    "revision": (Revision, None),
    "dtype": (Dtype, "float32"),
    "device": (Device, "auto"),
    "device_map": (DeviceMap, None),
    "max_memory": (MaxMemory, None),
    "trust_remote_code": (TrustRemoteCode, False),
    "allow_pickle": (AllowPickle, False),
    "gguf_file": (GgufFile, None),
}


def _option_group(parameter: str, options: dict, build: Callable[[dict, dict], Any]) -> Callable:
    """A decorator that gives a command the `options` (after its own) and hands it `build(values, own values)` as
    the one argument `parameter`."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != parameter]
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
                 for name, (annotation, default) in options.items()]

        @functools.wraps(command)
        def wrapper(**kwargs):
            values = {name: kwargs.pop(name) for name in options}
            return command(**kwargs, **{parameter: build(values, kwargs)})

        wrapper.__signature__ = signature.replace(parameters=[*own, *added])
        return wrapper

    return decorate


SELECT_OPTIONS = {  # parameter -> (option, default): how `select` and `run` score layers and choose one
    "calibration": (Calibration, None),
    "field": (Field, None),
    "limit": (Limit, DEFAULT_LIMIT),
    "metrics": (Metrics, ALL_METRICS),
    "rule": (Rule, DEFAULT_RULE),
    "tolerance": (Tolerance, 0.0),
    "min_speedup": (MinSpeedup, None),
    "include_layer0": (IncludeLayer0, False),
    "representation": (Representation, "exported"),
    "pooling": (Pooling, None),
    "batch_size": (BatchSize, 16),
    "max_length": (MaxLength, 512),
    "views": (Views, DEFAULT_VIEWS),
    "alpha": (Alpha, 1.0),
    "seed": (Seed, 0),
    "prompt": (Prompts, None),
    "transform": (Transforms, None),
    "fit_texts": (FitTexts, None),
}


def select_config(values: dict, progress: bool) -> SelectConfig:
    collect = CollectConfig(values["pooling"], values["representation"], values["batch_size"], values["max_length"],
                            progress=progress)
    return SelectConfig(calibration=values["calibration"], field=values["field"], limit=values["limit"],
                        metrics=values["metrics"], rule=values["rule"], tolerance=values["tolerance"],
                        min_speedup=values["min_speedup"], include_layer0=values["include_layer0"], collect=collect,
                        scoring=ScoringConfig(alpha=values["alpha"], views=values["views"], seed=values["seed"]),
                        prompt=values["prompt"], transform=values["transform"], fit_texts=values["fit_texts"])


# The model-loading options of every command that loads a model, handed over as one `load: LoadOptions`.
with_load_options = _option_group("load", LOAD_OPTIONS, lambda values, own: LoadOptions(**values))
# The scoring and selection options of `select` and `run`, handed over as one `selection: SelectConfig` (progress
# bars follow the command's own `quiet`).
with_select_options = _option_group(
    "selection", SELECT_OPTIONS, lambda values, own: select_config(values, progress=not own.get("quiet", False)))


def parse_sizes(text: str, option: str) -> tuple[int, ...]:
    """A comma-separated list of positive batch sizes, or a usage error naming `option`."""
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated integers, got {text!r}",
                                 param_hint=option) from None
    if not sizes or min(sizes) < 1:
        raise typer.BadParameter(f"batch sizes must be positive integers, got {text!r}", param_hint=option)
    return sizes
