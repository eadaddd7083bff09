"""What a run's report and summary say of a healed export: the layer kept and why, its fidelity to the full model
before and after the heal, every cut the sweep healed, the plan's estimate beside the minutes it took, and the
healed export's task scores beside the full model's. Plain words and blocks; `workflow.report` places them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from layerpick._util.formatting import number
from layerpick.workflow.page import Block, Heading, Table, Text

if TYPE_CHECKING:
    from layerpick.workflow.run import RunResult


def how_chosen(result: "RunResult") -> str:
    """The summary line's reason: `held-out cosine ... 0.45 before the heal, 0.91 after, line 0.88; select's rule
    ... kept layer 6`."""
    heal = result.export.heal
    sweep = heal.get("sweep") or {}
    line = f", line {1.0 - sweep['max_loss']:g}" if sweep else ""
    return (
        f"held-out cosine to the full model {_cos(heal['before'])} before the heal, {_cos(heal['after'])} after"
        f"{line}; select's rule {result.select.rule} kept layer {result.select.selected_layer}"
    )


def scores(result: "RunResult") -> tuple[float, float] | None:
    """(healed export's mean task score, the full model's), when both were validated."""
    healed, full = result.healed_validation, result.validation
    if healed is None or full is None:
        return None
    mine = [value for value in healed.mean_by_layer if value is not None]
    theirs = full.mean_by_layer[full.num_layers] if len(full.mean_by_layer) > full.num_layers else None
    if not mine or theirs is None:
        return None
    return mine[-1], theirs


def score_line(result: "RunResult") -> str | None:
    pair = scores(result)
    if pair is None:
        return None
    healed, full = pair
    return (
        f"mean task score: healed layer {result.export.layer} {healed:.4f}, full model {full:.4f} "
        f"({healed / full:.1%} of it)"
    )


def answer(result: "RunResult") -> list[str]:
    """The report's first lines for a healed export: which layer, how good."""
    export, heal = result.export, result.export.heal
    num = export.num_layers
    lines = [
        f"**Which layer:** layer {export.layer} of {num}, healed (kept: {export.kept}). Select's rule "
        f"`{result.select.rule}` kept the last layer, as it does for a trained embedder; `layerpick heal` trained "
        f"the cut on {heal['texts']['count']:,} unlabelled texts of {heal['texts']['source']} to give the full "
        f"model's vectors back, and kept {_kept_because(heal)}."
    ]
    how = (
        f"**How good:** held-out cosine to the full model {_cos(heal['before'])} before the heal and "
        f"{_cos(heal['after'])} after (10-nearest-neighbour agreement {_share(heal['before'], 'knn_overlap')} -> "
        f"{_share(heal['after'], 'knn_overlap')}, {heal['after']['texts']} held-out texts)"
    )
    pair = scores(result)
    if pair:
        how += f"; mean task score {pair[0]:.4f} against the full model's {pair[1]:.4f} ({pair[0] / pair[1]:.1%})"
    lines.append(how + ".")
    return lines


def blocks(result: "RunResult") -> list[Block]:
    """The report's Heal section: the settings, the fidelity of every cut the sweep healed, the time."""
    heal = result.export.heal
    training, texts = heal["training"], heal["texts"]
    rows = [
        ["teacher", heal["teacher"]["description"]],
        ["blocks kept", ", ".join(map(str, heal["teacher"].get("blocks") or [])) or "the first K"],
        [
            "texts",
            f"{texts['count']:,} of {texts['source']} (sha256 {texts['sha256'][:16]}), {texts['held_out']} held out",
        ],
        [
            "training",
            f"{training['epochs']} epoch{'s' if training['epochs'] != 1 else ''}, learning rate "
            f"{training['learning_rate']:g}, batch {training['batch_size']}, {training['device']}",
        ],
        ["minutes", _minutes(result, heal)],
    ]
    section: list[Block] = [Heading("Heal"), Table(["", ""], rows)]
    sweep = heal.get("sweep")
    if sweep:
        cut = [
            [
                str(entry["layer"]),
                _cos(entry["before"]),
                _cos(entry["after"]),
                "kept" if entry["layer"] == sweep["chosen"] else "",
            ]
            for entry in sweep["layers"]
        ]
        cut += [[str(k), "-", "-", "not healed: a shallower cut cleared the line"] for k in sweep.get("not_healed", [])]
        section += [
            Text(f"Every cut healed, shallowest first; the rule: {sweep['rule']}."),
            Table(["K", "held-out cosine before", "after", ""], cut),
        ]
    line = score_line(result)
    if line:
        section.append(Text(line[0].upper() + line[1:] + f" (`{_tasks(result)}`, the export scored whole)."))
    return section


def _kept_because(heal: dict[str, Any]) -> str:
    sweep = heal.get("sweep")
    if not sweep:
        return "the one cut asked for"
    return f"the shallowest cut whose held-out cosine is at least {1.0 - sweep['max_loss']:g}"


def _minutes(result: "RunResult", heal: dict[str, Any]) -> str:
    took = f"{heal['training'].get('minutes', 0):.1f} for K = {heal['layer']}"
    plan = result.heal_plan
    if plan is None or str(heal["layer"]) not in plan.minutes:
        return took
    return f"{took} (estimated {plan.minutes[str(heal['layer'])]:.1f} before it started)"


def _tasks(result: "RunResult") -> str:
    return ",".join(result.config.tasks)


def _cos(fidelity: dict[str, Any]) -> str:
    return number(fidelity.get("cosine"), ".3f")


def _share(fidelity: dict[str, Any], key: str) -> str:
    return number(fidelity.get(key), ".2f")
