"""The frontier and the picks of validation.json: which layers trade validated quality for speed, and which
layer the unsupervised rule and the validated choice (`--choose validated`, `--max-loss X`) take.

Pure: built from the mean task score by layer, the per-layer cost (`layerpick.core.cost`), the select
report's pick and the choice options (`layerpick.frontier.choice`).
"""

from __future__ import annotations

from typing import Any, Sequence

from layerpick.core.cost import LayerCosts
from layerpick.frontier.choice import (
    ChoiceError,
    ChoiceOptions,
    choose_validated,
    frontier,
)


def frontier_section(
    means: Sequence[float | None],
    costs: LayerCosts | None,
    layers: Sequence[int],
    selected: int | None,
    options: ChoiceOptions,
) -> dict[str, Any] | None:
    """validation.json's "frontier": the frontier layers (mean score against ideal speed-up), each pick with
    its score, loss against the best layer and ideal speed-up, the chosen layer and why; None without a cost
    or without a scored layer >= 1."""
    if costs is None:
        return None
    try:
        validated = choose_validated(means, layers, options.max_loss)
    except ChoiceError:
        return None
    speedup = costs.ideal_speedup
    picks = {"validated": {**validated.to_json(), "ideal_speedup": speedup[validated.layer]}}
    if selected is not None and means[selected] is not None:
        picks["unsupervised"] = {
            "layer": selected,
            "score": means[selected],
            "loss": validated.best_score - means[selected],
            "ideal_speedup": speedup[selected],
        }
    chosen = picks.get(options.choose)
    return {
        "quality": "mean task score",
        "layers": frontier(means, speedup, [k for k in layers if k >= 1]),
        "picks": picks,
        "choose": options.choose,
        "max_loss": options.max_loss,
        "chosen_layer": chosen["layer"] if chosen else None,
        "reason": reason(picks, options),
        "best_layer": validated.best_layer,
        "best_score": validated.best_score,
    }


def pair_frontier_section(
    table: dict[str, dict[str, Any]], costs: LayerCosts | None, layers: Sequence[int], options: ChoiceOptions
) -> dict[str, Any] | None:
    """With several (template, transform) variants: the frontier over every (variant, layer) pair (mean score
    against ideal speed-up), the best pair, and the pair `options` choose (`--choose validated`: the best;
    `--max-loss X`: the fastest pair within X of the best, the better one on ties)."""
    if costs is None:
        return None
    speedup = costs.ideal_speedup
    pairs = [
        (label, k, entry["mean_by_layer"][k])
        for label, entry in table.items()
        for k in layers
        if k >= 1 and entry["mean_by_layer"][k] is not None
    ]
    if not pairs:
        return None
    best = max(pairs, key=lambda p: (p[2], speedup[p[1]]))
    within = [p for p in pairs if p[2] >= best[2] - (options.max_loss or 0.0) - 1e-12]
    chosen = max(within, key=lambda p: (speedup[p[1]], p[2])) if options.max_loss is not None else best
    on_frontier = [
        p
        for p in pairs
        if not any(
            q[2] >= p[2] and speedup[q[1]] >= speedup[p[1]] and (q[2] > p[2] or speedup[q[1]] > speedup[p[1]])
            for q in pairs
        )
    ]

    def entry(pair) -> dict[str, Any]:
        return {
            "variant": pair[0],
            "layer": pair[1],
            "score": pair[2],
            "loss": best[2] - pair[2],
            "ideal_speedup": speedup[pair[1]],
        }

    return {
        "pairs": [entry(p) for p in sorted(on_frontier, key=lambda p: -speedup[p[1]])],
        "best": entry(best),
        "chosen": entry(chosen) if options.validated else None,
        "max_loss": options.max_loss,
    }


def reason(picks: dict[str, dict[str, Any]], options: ChoiceOptions) -> str:
    """Why the chosen layer is the one to export, and what it gives up against the best layer."""
    validated = picks["validated"]
    best = f"the best layer, {validated['best_layer']} ({validated['best_score']:.4f})"
    if options.validated:
        pick = validated
        why = (
            f"--max-loss {options.max_loss:g}: the shallowest layer within {options.max_loss:g} of {best}"
            if options.max_loss is not None
            else f"--choose validated: {best}"
        )
    elif "unsupervised" in picks:
        pick = picks["unsupervised"]
        why = (
            "the unsupervised rule's pick (the default; --choose validated or --max-loss X choose from the validation)"
        )
    else:
        return "no unsupervised pick to compare (give --report), and --choose validated or --max-loss X not given"
    return (
        f"layer {pick['layer']}: {why}; it gives up {pick['loss']:.4f} mean score against the best layer, "
        f"at an ideal speed-up of {pick['ideal_speedup']:.2f}x over the full model"
    )
