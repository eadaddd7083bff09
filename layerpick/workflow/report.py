"""The one-page report of `layerpick run`: report.md and a self-contained report.html (plots embedded).

Owns what the page says and in what order: the answer first (which layer, how good, how much faster), then
the model, the calibration set, every metric by layer, the rule, validation by layer, the export and its
parity check, the speed-up, and the commands that reproduce each stage. The page is built once as a list of
blocks; markdown and HTML are two renderings of the same blocks, so they cannot disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from layerpick._util.atomic import write_text_atomic
from layerpick._util.filenames import RUN_REPORT_PAGE, RUN_REPORT_TEXT
from layerpick._util.formatting import COST_HEADER, cost_cells, number
from layerpick.selection.report import (
    ARROWS,
    format_score,
    layer_cost_cells,
    layer_label,
    side_by_side,
)
from layerpick.frontier.table import frontier_table, picks_lines
from layerpick.validation.result import ValidationReport
from layerpick.workflow import heal_report
from layerpick.workflow.commands import reproduce_commands
from layerpick.workflow.page import Block, Code, Heading, Image, Table, Text, to_html, to_markdown

if TYPE_CHECKING:
    from layerpick.workflow.run import RunResult


def write_run_report(result: "RunResult") -> list[Path]:
    """Write report.md and report.html into the run's output folder."""
    blocks = build_blocks(result)
    md, page = result.output / RUN_REPORT_TEXT, result.output / RUN_REPORT_PAGE
    write_text_atomic(md, to_markdown(blocks, result.output))
    write_text_atomic(page, to_html(blocks, f"layerpick run: {result.model}"))
    return [md, page]


def build_blocks(result: "RunResult") -> list[Block]:
    return [
        Heading(f"layerpick run: {result.model}", 1),
        *_answer(result),
        *_model(result),
        *_calibration(result),
        *_metrics(result),
        *_rule(result),
        *_validation(result),
        *_frontier(result),
        *_export(result),
        *(heal_report.blocks(result) if result.export.is_healed else []),
        *_speed(result),
        *_reproduce(result),
    ]


def _answer(result: "RunResult") -> list[Block]:
    if result.export.is_healed:
        return [Text(line) for line in [*heal_report.answer(result), _speed_sentence(result)]]
    select, k, num = result.select, result.export.layer, result.select.num_layers
    if result.config.choice.validated:
        lines = [
            f"**Which layer:** layer {k} of {num} (relative depth {k / num:.2f}), chosen from the validation "
            f"(`{' '.join(result.config.choice.flags())}`: {result.config.choice.describe()}); the rule "
            f"`{select.rule}` picked layer {select.selected_layer} without labels{_prompt_words(select)}."
        ]
    else:
        lines = [
            f"**Which layer:** layer {k} of {num} (relative depth {k / num:.2f}), chosen by the rule "
            f"`{select.rule}` without labels{_prompt_words(select)}."
        ]
    lines[0] = lines[0][:-1] + _transform_words(result.export.transform) + "."
    comparison = result.validation.comparison if result.validation else None
    if comparison:
        last, best = comparison["last"], comparison["best"]
        pair = (result.validation.pair_frontier or {}).get("chosen") if result.config.choice.validated else None
        chosen = {"mean_score": pair["score"] if pair else result.validation.mean_by_layer[k]}
        variant = f" ({pair['variant']}; the rest for {_variant_of(result.validation)})" if pair else ""
        lines.append(
            f"**How good:** mean main score {_num(chosen['mean_score'])} at layer {k}{variant}, "
            f"{_num(last['mean_score'])} at the last layer, best {_num(best['mean_score'])} at layer "
            f"{best['layer']} ({_tasks(result.validation)})."
        )
    else:
        lines.append("**How good:** not validated (run with `--tasks` to score layers on MTEB tasks).")
    lines.append(_speed_sentence(result))
    return [Text(line) for line in lines]


def _prompt_words(select) -> str:
    prompt = select.prompt or {}
    if prompt.get("template") is None:
        return ""
    among = f" (chosen among {', '.join(select.by_prompt)})" if select.by_prompt else ""
    return f", with the prompt template `{prompt['name']}`{among}, which the export applies by itself"


def _variant_of(validation: ValidationReport) -> str:
    prompt = (validation.prompt or {}).get("name") or "none"
    transform = (validation.transform or {}).get("name")
    return f"{prompt}+{transform}" if transform else prompt


def _transform_words(transform: dict | None) -> str:
    if not transform:
        return ""
    return (
        f"; the export applies a `{transform['name']}` transform after pooling ({transform['output_dim']} "
        f"dimensions, fitted on {transform['fit']['count']} unlabelled texts of {transform['fit']['source']})"
    )


def _speed_sentence(result: "RunResult") -> str:
    kept = result.export.parameters["cut"] / max(result.export.parameters["full"], 1)
    parts = [f"keeps {kept:.0%} of the parameters"]
    for row in result.bench.rows if result.bench else []:
        memory = f", peak memory x{row.memory_ratio:.2f}" if row.memory_ratio else ""
        parts.append(f"batch {row.batch_size}: {_ratio(row.throughput_ratio)} the full model's throughput{memory}")
    return "**How much faster:** the export " + "; ".join(parts) + "."


def _model(result: "RunResult") -> list[Block]:
    select = result.select
    rows = [
        ["model", f"`{result.model}`"],
        ["loaded from", f"`{select.model_path}`"],
        ["revision", str(select.revision or "default")],
        ["family", select.family],
        ["layers", f"{select.num_layers} blocks (layer 0 = the embeddings)"],
        ["representation", select.representation],
        ["pooling", select.pooling],
        ["prompt", _prompt_cell(select.prompt)],
        ["transform", (result.export.transform or {}).get("name") or "none"],
        ["dtype", select.dtype],
        ["device", select.device or "not recorded"],
    ]
    healed = result.export.is_healed  # select's advice to heal was taken: not repeated
    rows += [["note", note] for note in select.notes if not (healed and "layerpick heal" in note)]
    return [Heading("Model"), Table(["", ""], rows)]


def _prompt_cell(prompt: dict | None) -> str:
    if not prompt or prompt.get("template") is None:
        return "none (plain text)"
    return f"{prompt['name']}: `{prompt['template']}`"


def _calibration(result: "RunResult") -> list[Block]:
    calibration = result.select.calibration
    return [
        Heading("Calibration set"),
        Text(
            f"{calibration['count']} texts from {calibration['source']} (sha256 {calibration['sha256'][:16]}), "
            f"seed {result.select.seed}, {result.select.views} augmented views per text, max length "
            f"{result.select.max_length} tokens."
        ),
    ]


def _metrics(result: "RunResult") -> list[Block]:
    select = result.select
    names = list(select.scores)
    header = ["layer", *(f"{name} {ARROWS[select.directions[name]]}" for name in names)]
    header += list(COST_HEADER) if select.costs else []
    rows = [
        [layer_label(select, k), *(format_score(select.scores[n][k]) for n in names), *layer_cost_cells(select, k)]
        for k in range(select.num_layers + 1)
    ]
    return [
        Heading("Every metric by layer"),
        Table(header, rows),
        Text(
            "Arrows: each metric's documented direction. ◀ marks the rule's pick, ◆ the unsupervised "
            "frontier. " + (select.cost["model"].capitalize() + "." if select.cost else "")
        ),
        Image(result.output / "select" / "metrics.png", "metrics against relative depth"),
    ]


def _rule(result: "RunResult") -> list[Block]:
    select = result.select
    blocks = [
        Heading("Rule and chosen layer"),
        Text(f"Rule `{select.rule}` (tolerance {select.tolerance}): {select.choice}."),
    ]
    side = side_by_side(select)
    if side:
        header, rows = side
        blocks += [
            Text("Every (prompt template, layer) pair, each template from its own pass: the rule's metrics."),
            Table(header, rows),
        ]
    return blocks


def _validation(result: "RunResult") -> list[Block]:
    data = result.validation
    if data is None:
        return [Heading("Validation"), Text("Not run: no `--tasks` were given.")]
    names = list(data.tasks)
    marks = {key: getattr(data, f"{key}_layer") for key in ("selected", "last", "best")}
    rows = []
    for k in data.layers_evaluated:
        tags = ", ".join(key for key, layer in marks.items() if layer == k)
        rows.append([str(k), *(_num(data.task_scores(n)[k]) for n in names), _num(data.mean_by_layer[k]), tags])
    blocks: list[Block] = [
        Heading("Validation by layer"),
        Text("Main score of each task (MTEB's own evaluators) at each evaluated layer."),
        Table(["layer", *names, "mean", ""], rows),
    ]
    if data.by_prompt:
        labels = list(data.by_prompt)
        best = data.best_pair or {}
        rows = [
            [
                str(k),
                *(
                    _num(data.by_prompt[label]["mean_by_layer"][k])
                    + (" ◀" if (label, k) == (best.get("prompt"), best.get("layer")) else "")
                    for label in labels
                ),
            ]
            for k in data.layers_evaluated
        ]
        blocks += [Text("Mean main score by prompt template (◀ the best pair)."), Table(["layer", *labels], rows)]
    blocks += [Text(f"Failed: {task}: {message}") for task, message in data.failures.items()]
    return blocks + [Image(result.output / "validate" / "validation.png", "task scores against relative depth")]


def _frontier(result: "RunResult") -> list[Block]:
    """The quality-speed trade-off: from the validation when there is one, else from the rule's objective."""
    measured = _measured(result)
    section = result.validation.frontier if result.validation else None
    if section:
        header, rows = frontier_table(result.validation.to_json(), measured)
        lines = picks_lines(section)
        exported = result.export.layer
        lines[-1] = (
            f"Exported: {section['reason']}."
            if exported == section.get("chosen_layer")
            else f"Exported: layer {exported}."
        )
        return [
            Heading("Quality against speed"),
            Text(
                "The frontier: the evaluated layers that no other layer beats on both the validated mean "
                "score and the ideal speed-up (compute per token against the full model)."
            ),
            Table(header, rows),
            *[Text(line) for line in lines],
            Image(result.output / "validate" / "frontier.png", "mean task score against ideal speed-up"),
        ]
    select = result.select
    if not select.frontier or select.costs is None:
        return []
    costs = select.costs
    rows = [
        [
            str(k),
            format_score(select.objective[k]),
            *cost_cells(costs.params_kept[k], costs.params_full, costs.ideal_speedup[k]),
            measured.get(k, "–"),
            "rule's pick" if k == select.selected_layer else "",
        ]
        for k in select.frontier
    ]
    return [
        Heading("Quality against speed"),
        Text(
            f"Without tasks, the frontier of the unsupervised scores: the layers that no other layer beats on "
            f"both the rule's objective (`{select.rule}`, rescaled so 1 is its best layer) and the ideal "
            "speed-up. Validate them on your tasks (`--tasks ... --layers all`) before exporting a faster one."
        ),
        Table(["layer", "rule objective", *COST_HEADER, "measured speed-up", ""], rows),
    ]


def _measured(result: "RunResult") -> dict[int, str]:
    """The bench's throughput ratio of the exported layer, by batch size, as one cell."""
    rows = result.bench.rows if result.bench else []
    if not rows:
        return {}
    return {result.export.layer: ", ".join(f"{_ratio(r.throughput_ratio)} (batch {r.batch_size})" for r in rows)}


def _export(result: "RunResult") -> list[Block]:
    export = result.export
    parity = export.parity
    verdict = ("passed" if parity["passed"] else "FAILED") + (
        " (the plain cut, before the heal)" if export.is_healed else ""
    )
    return [
        Heading("Export"),
        Table(
            ["", ""],
            [
                ["location", f"`{result.export_dir}`"],
                ["layers kept", export.kept],
                ["parameters", f"{export.parameters['cut']:,} of {export.parameters['full']:,}"],
                ["weights", f"{export.weights_bytes / 1e6:.1f} MB (safetensors)"],
                [
                    "parity",
                    f"{verdict}: max abs diff {parity['max_abs_diff']:.2e} over {parity['texts']} texts against "
                    f"layer {export.layer} of the full model (tolerance {parity['tolerance']:.1e})",
                ],
            ],
        ),
    ]


def _speed(result: "RunResult") -> list[Block]:
    bench = result.bench
    if bench is None:
        return [Heading("Speed"), Text("Not measured (`--no-bench`).")]
    rows = [
        [
            str(row.batch_size),
            f"{row.exported.texts_per_s:.1f}",
            f"{row.baseline.texts_per_s:.1f}",
            _ratio(row.throughput_ratio),
            _ratio(row.latency_median_ratio),
            _ratio(row.memory_ratio),
        ]
        for row in bench.rows
    ]
    return [
        Heading("Speed"),
        Text(
            f"Side by side in one process, {bench.texts} texts, {bench.repeats} interleaved repeats, "
            f"{bench.device}, {bench.threads} threads. Ratios are export / full."
        ),
        Table(["batch", "export texts/s", "full texts/s", "throughput", "median latency", "peak memory"], rows),
    ]


def _reproduce(result: "RunResult") -> list[Block]:
    return [
        Heading("Reproduce"),
        Text("The whole run, then each stage on its own:"),
        Code("\n".join(reproduce_commands(result))),
    ]


def _num(value: Any) -> str:
    return number(value)


def _ratio(value: Any) -> str:
    return number(value, ".2f", "x")


def _tasks(validation: ValidationReport) -> str:
    count = len(validation.tasks)
    return f"{count} task" if count == 1 else f"{count} tasks"
