"""The option aliases the commands share: each Typer option an `Annotated` type declared once here and used by every
command that has it, each also read from a LAYERPICK_* variable where it names one. What they default to comes from
the config dataclasses (`values.default`), at the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from layerpick.core import registry
from layerpick.core.prompts import BUILTIN_TEMPLATES, DEFAULT_PROMPT
from layerpick.core.transform import DEFAULT_TRANSFORM


ModelArg = Annotated[
    Optional[str],
    typer.Argument(
        help="Registry alias, local directory, .gguf file or hub id.",
        envvar="LAYERPICK_MODEL",
        show_default=registry.DEFAULT_MODEL,
    ),
]

Revision = Annotated[
    Optional[str], typer.Option(help="Hub revision (branch, tag or commit).", envvar="LAYERPICK_REVISION")
]
Dtype = Annotated[str, typer.Option(help="float32, bfloat16 or float16.", envvar="LAYERPICK_DTYPE")]
Device = Annotated[
    str,
    typer.Option(help="cpu, cuda, mps or auto (the GPU when there is one, else the CPU).", envvar="LAYERPICK_DEVICE"),
]
DeviceMap = Annotated[
    Optional[str],
    typer.Option(
        "--device-map", help="'auto' spreads a large model over devices (accelerate).", envvar="LAYERPICK_DEVICE_MAP"
    ),
]
MaxMemory = Annotated[
    Optional[str],
    typer.Option(
        "--max-memory",
        help="With --device-map: the most each device may hold, e.g. "
        "0=20GiB,1=20GiB,cpu=64GiB (GPU index or cpu, mps, disk; the rest is offloaded).",
        envvar="LAYERPICK_MAX_MEMORY",
    ),
]
TrustRemoteCode = Annotated[
    bool,
    typer.Option(
        "--trust-remote-code", help="Run the model repository's own code.", envvar="LAYERPICK_TRUST_REMOTE_CODE"
    ),
]
AllowPickle = Annotated[bool, typer.Option("--allow-pickle", help="Also load pickle (.bin) weights.")]
GgufFile = Annotated[Optional[str], typer.Option("--gguf-file", help="GGUF file name inside the model directory.")]

Calibration = Annotated[
    Optional[str],
    typer.Option(
        help="Text file (one per line), JSONL file, task folder, or a pipe (<(cmd), /dev/stdin: lines, "
        "or JSONL with --field). Default: the embedded set.",
        envvar="LAYERPICK_CALIBRATION",
    ),
]
Field = Annotated[
    Optional[str],
    typer.Option(
        "--field",
        help="The field holding the text in JSONL texts: --calibration's and --fit-texts' alike (default 'text'; "
        "export and validate from a --report: the field it was selected with).",
        envvar="LAYERPICK_FIELD",
    ),
]
Limit = Annotated[
    Optional[int],
    typer.Option(
        help="Use a seeded sample of N texts (a number above the set's size keeps every text).",
        envvar="LAYERPICK_LIMIT",
    ),
]
Seed = Annotated[int, typer.Option(help="Seed for sampling and augmentations.", envvar="LAYERPICK_SEED")]
BatchSize = Annotated[
    int,
    typer.Option(
        help="Texts per forward batch (serve: the most the worker embeds in one batch).", envvar="LAYERPICK_BATCH_SIZE"
    ),
]
MaxLength = Annotated[
    Optional[int],
    typer.Option(
        help="Truncate texts to this many tokens (validate's default: the model's sentence-transformers setting, "
        "else 512).",
        envvar="LAYERPICK_MAX_LENGTH",
    ),
]
Pooling = Annotated[
    Optional[str],
    typer.Option(
        help="mean, lasttoken or cls (default: the family's; lasttoken with a prompt template).",
        envvar="LAYERPICK_POOLING",
    ),
]
Representation = Annotated[
    str,
    typer.Option(
        help="'exported' (what the cut model outputs) or 'raw' (residual stream; research only).",
        envvar="LAYERPICK_REPRESENTATION",
    ),
]
Metrics = Annotated[str, typer.Option(help="Comma-separated metrics to compute.", envvar="LAYERPICK_METRICS")]
Rule = Annotated[
    str, typer.Option(help="min-<metric>, max-<metric> or rank:<rule>,<rule>,...", envvar="LAYERPICK_RULE")
]
Tolerance = Annotated[
    float,
    typer.Option(
        help="Take the smallest layer within this fraction of the rule's best (0 = the best; trades quality for speed)."
    ),
]
MinSpeedup = Annotated[
    Optional[float],
    typer.Option(
        "--min-speedup",
        help="Only layers with at least this ideal speed-up over the full model are candidates "
        "(e.g. 3); applied before --tolerance.",
        envvar="LAYERPICK_MIN_SPEEDUP",
    ),
]
Choose = Annotated[
    Optional[str],
    typer.Option(
        "--choose",
        help="Which layer to export with tasks: 'unsupervised' (the rule's pick, the default) or "
        "'validated' (the best validated mean score).",
        envvar="LAYERPICK_CHOOSE",
    ),
]
MaxLoss = Annotated[
    Optional[str],
    typer.Option(
        "--max-loss",
        help="Export the shallowest layer whose validated mean score is within this absolute loss of "
        "the best layer's (e.g. 0.01); needs tasks.",
        envvar="LAYERPICK_MAX_LOSS",
    ),
]
IncludeLayer0 = Annotated[bool, typer.Option("--include-layer0", help="Let the embeddings (layer 0) win.")]
Alpha = Annotated[float, typer.Option(help="Renyi order of the matrix entropies (1 = von Neumann).")]
Views = Annotated[
    int, typer.Option(help="Augmented views per text for dime/infonce (2) and lidar (all).", envvar="LAYERPICK_VIEWS")
]
PROMPT_HELP = (
    "a built-in name ("
    + ", ".join(f"{name}: {template}" for name, template in BUILTIN_TEMPLATES.items())
    + "), none (plain text), or a template with one {text}"
)
Prompt = Annotated[
    Optional[str],
    typer.Option(
        "--prompt",
        help=f"Prompt template each text is wrapped in: {PROMPT_HELP}. select, run and validate also take "
        "several names, comma-separated (none,eol,sum), and score every (template, layer) pair side by side. With a "
        f"template, last-token pooling is the default. Default for select and run: {DEFAULT_PROMPT}; for export and "
        "validate: the --report's template, else none; for collect: none.",
        envvar="LAYERPICK_PROMPT",
    ),
]
TRANSFORM_HELP = (
    "auto (none for a trained sentence embedder; for other models none and whiten-256 side by "
    "side, the rule choosing), none, center, whiten (every direction the fit set supports), whiten-D (the top D "
    "principal "
    "directions, unit variance), abtt or abtt-K (remove the mean and the top K directions)"
)
Transform = Annotated[
    Optional[str],
    typer.Option(
        "--transform",
        help=f"Post-pooling transform fitted per layer on the fit texts (export: at the exported layer, "
        f"shipped as a Dense module): {TRANSFORM_HELP}. select, run and validate also take several, comma-separated "
        f"(none,whiten-256), and score every (transform, layer) pair side by side. Default for select and run: "
        f"{DEFAULT_TRANSFORM}; for export and validate: the --report's, else none.",
        envvar="LAYERPICK_TRANSFORM",
    ),
]
FitTexts = Annotated[
    Optional[str],
    typer.Option(
        "--fit-texts",
        help="Unlabelled texts the transform is fitted on (a text file, JSONL or task folder, e.g. the "
        "documents you will embed). Default: the calibration set (every text of it).",
        envvar="LAYERPICK_FIT_TEXTS",
    ),
]
Normalize = Annotated[
    Optional[bool],
    typer.Option(
        "--normalize/--no-normalize",
        help="Unit-length (L2-normalised) embeddings, or raw pooled ones (default: as "
        "the model's own sentence-transformers pipeline; raw for other models).",
    ),
]
TASKS_HELP = (
    "MTEB task names, MTEB benchmark names, or task folders; comma-separated or repeated (a path that exists "
    "is taken whole, commas and all). A folder named after "
    "an MTEB task (e.g. data/STSBenchmark) runs that task on the folder's data, offline; any other folder is a "
    "custom task of the kind its files imply: test.jsonl with text+label (and train.jsonl), sentence1+sentence2+"
    "score (STS), sentence1+sentence2+label (pair classification), sentences+labels per line (clustering), or "
    "corpus.jsonl+queries.jsonl+qrels.tsv (retrieval). validate needs at least one; run without any validates "
    "nothing."
)
Tasks = Annotated[Optional[list[str]], typer.Option("--tasks", "-t", help=TASKS_HELP, envvar="LAYERPICK_TASKS")]
TaskData = Annotated[
    Optional[list[Path]],
    typer.Option(
        "--task-data",
        help="Folder holding task folders named after MTEB tasks; used instead of the hub (offline).",
        envvar="LAYERPICK_TASK_DATA",
    ),
]
StaticExports = Annotated[
    Optional[list[Path]],
    typer.Option(
        "--static",
        help="A static export of the model (layerpick export --format static) to score beside its layers on the "
        "same tasks, shown in the frontier table and plots (it has no ideal speed-up; bench --static times it). "
        "Repeat for several.",
    ),
]
Backend = Annotated[
    str,
    typer.Option(
        help="What runs the model: torch, onnx or onnx-int8 (an export's ONNX graphs, through onnxruntime; bench: "
        "the export, the full model always runs on torch)."
    ),
]
Output = Annotated[Optional[Path], typer.Option(help="Output directory.")]
Json = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print the result as JSON on stdout and nothing else (select: report.json, validate: "
        "validation.json, compare: compare.json, bench: the result object, run: a summary object, heal: the "
        "export's heal section).",
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.", envvar="LAYERPICK_QUIET")]
Threads = Annotated[
    Optional[int],
    typer.Option(min=1, help="Torch intra-op CPU threads (default: torch's own).", envvar="LAYERPICK_THREADS"),
]
