"""What validation.json says, from the evaluations' outcomes: the numbers by layer and the sections beside them.

Owns: the document of the leading setup (each task's main score by layer, their mean, the selected, last and
best layers compared, the frontier, the metrics' correlations with the scores, texts encoded, timings); the
`by_prompt` table when several (template, transform) pairs were evaluated, with the best pair; the
`static_exports` section of `--static` tables; and the failures, labelled by setup.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from layerpick._util.versions import library_versions
from layerpick.core.cost import LayerCosts
from layerpick.frontier import scores as layer_scores
from layerpick.frontier.choice import ChoiceOptions
from layerpick.selection.result import SelectReport
from layerpick.validation.evaluate import TaskOutcome
from layerpick.validation.picks import frontier_section
from layerpick.validation.sources import Setup
from layerpick.validation.tasks import TaskSpec


def by_prompt_document(setups, runs, layers: list[int]) -> dict[str, Any]:
    """Every (template, transform)'s mean score by layer side by side, and the best (variant, layer) pair."""
    table = {}
    for one, outcomes in zip(setups, runs):
        means = layer_scores.mean_by_layer({o.spec.name: o.scores for o in outcomes}, layers, one.num_layers)
        table[one.variant] = {
            "template": one.facts["prompt"]["template"],
            "pooling": one.facts["pooling"],
            "transform": one.facts.get("transform"),
            "mean_by_layer": means,
            "best_layer": layer_scores.best_layer(means),
            "tasks": {o.spec.name: [o.scores.get(k) for k in range(one.num_layers + 1)] for o in outcomes},
        }
    scored = [
        (entry["mean_by_layer"][entry["best_layer"]], label, entry["best_layer"])
        for label, entry in table.items()
        if entry["best_layer"] is not None
    ]
    best = max(scored) if scored else None
    return {"by_prompt": table, "best_pair": {"prompt": best[1], "layer": best[2], "score": best[0]} if best else None}


def failures(outcomes: list[TaskOutcome]) -> dict[str, str]:
    """Each failed task's one-line error, by task name."""
    return {o.spec.name: o.failure for o in outcomes if o.failure}


def labelled_failures(labelled: list[tuple[str, list[TaskOutcome]]]) -> dict[str, str]:
    """The failures of several setups' runs, each task name followed by its setup's label in brackets."""
    return {
        f"{name} ({label})": failure for label, outcomes in labelled for name, failure in failures(outcomes).items()
    }


def static_document(setups: list[Setup], runs: list[list[TaskOutcome]], mean_over: list[str]) -> list[dict]:
    """validation.json's `static_exports`: each `--static` table's main score per task and its mean over the
    tasks the layers' mean is over (None where one of those failed), at the layer it was distilled from."""
    entries = []
    for setup, outcomes in zip(setups, runs):
        layer = next(iter(setup.slots))
        scores = {o.spec.name: o.scores.get(layer) for o in outcomes}
        over = [scores.get(name) for name in mean_over]
        entries.append(
            {
                "name": static_name(setup),
                "path": setup.facts["exported_dir"],
                "layer": layer,
                "pca_dims": (setup.facts.get("static") or {}).get("pca_dims"),
                "main_score": scores,
                "mean": float(np.mean(over)) if over and None not in over else None,
            }
        )
    return layer_scores.clean(entries)


def static_name(setup: Setup) -> str:
    """A `--static` table's name: its folder's."""
    return Path(setup.facts["exported_dir"]).name


def document(
    setup: Setup,
    specs: list[TaskSpec],
    outcomes: list[TaskOutcome],
    layers: list[int],
    select: SelectReport | None,
    started: float,
    choice: ChoiceOptions,
) -> dict[str, Any]:
    """validation.json's content for the leading setup: each task's main score by layer, their mean, the
    selected, last and best layers compared, the frontier, the metrics' correlations with the scores, timings."""
    L = setup.num_layers
    scores = {o.spec.name: o.scores for o in outcomes}
    means = layer_scores.mean_by_layer(scores, layers, L)
    best = layer_scores.best_layer(means)
    selected = select.selected_layer if select else None
    evaluate_s = sum(o.seconds for o in outcomes) - setup.source.collect_seconds
    facts = dict(setup.facts)
    load_s = facts.pop("load_s", None)
    data = {
        **facts,
        "layers_evaluated": layers,
        "tasks": {
            o.spec.name: {
                **o.spec.describe(),
                "main_score_by_layer": [o.scores.get(k) for k in range(L + 1)],
                "evaluations_run": o.ran,
                "evaluations_reused": o.reused,
            }
            for o in outcomes
        },
        "mean_by_layer": means,
        "mean_over": [o.spec.name for o in outcomes if all(k in o.scores for k in layers)],
        "selected_layer": selected,
        "last_layer": L,
        "best_layer": best,
        "comparison": layer_scores.comparison(means, selected, L, best),
        "frontier": frontier_section(means, costs(facts), layers, selected, choice),
        "metric_correlations": layer_scores.metric_correlations(select.scores, select.directions, means)
        if select
        else None,
        "select_report": {"model": select.model, "rule": select.rule} if select else None,
        "texts_encoded": setup.source.encoded,
        "timings": {
            "load_s": load_s,
            "collect_s": setup.source.collect_seconds,
            "evaluate_s": evaluate_s,
            "total_s": time.perf_counter() - started,
        },
        "versions": library_versions(),
        "failures": failures(outcomes),
    }
    return layer_scores.clean(data)


def costs(facts: dict[str, Any]) -> LayerCosts | None:
    """The per-layer costs a setup's facts carry (None without them)."""
    return LayerCosts.from_json(facts["cost"]) if facts.get("cost") else None
