"""Choosing a (prompt template, layer) pair: the rule applied to every template's layers at once.

Each template's layers are scored from one pass per template (`scoring.score_layers` with the template in
the collect config); this module puts all the (template, layer) pairs side by side as candidates of one rule,
as `rules.choose_layer` does for the layers of one template: `min-`/`max-` compare the metric's values across
templates, `rank:` ranks every pair, and a tolerance takes the smallest layer within it of the best pair
(between equal layers, the better pair).
"""

from __future__ import annotations

from dataclasses import dataclass

from layerpick._util.finite import is_finite
from layerpick.errors import LayerpickError
from layerpick.selection.rules import Rule, rule_objective, within_budget


@dataclass(frozen=True)
class PairChoice:
    """The chosen template (by label) and layer, the rule's own best pair, and each pair's objective."""

    prompt: str
    layer: int
    best_prompt: str
    best_layer: int
    rule: str
    tolerance: float
    objective: dict[str, tuple[float | None, ...]]  # label -> per layer, 1 = best pair under the rule
    min_speedup: float | None = None

    def describe(self) -> str:
        text = f"prompt {self.prompt}, layer {self.layer} by rule {self.rule}"
        if self.min_speedup is not None:
            text += f" among the layers with an ideal speed-up of at least {self.min_speedup:g}x"
        if (self.prompt, self.layer) != (self.best_prompt, self.best_layer):
            text += (
                f" (smallest layer within {self.tolerance:g} of the rule's best, prompt {self.best_prompt} "
                f"layer {self.best_layer})"
            )
        return text


def choose_pair(
    scores_by_prompt: dict[str, dict[str, list[float | None]]],
    rule: Rule,
    *,
    tolerance: float = 0.0,
    include_layer0: bool = False,
    speedup=None,
    min_speedup: float | None = None,
) -> PairChoice:
    """Apply `rule` to every (variant, layer) pair; `scores_by_prompt` is label -> metric -> L+1 values. With
    `min_speedup`, only layers whose ideal `speedup` meets it are candidates."""
    if not 0.0 <= tolerance < 1.0:
        raise LayerpickError(f"--tolerance must be in [0, 1) (got {tolerance})")
    pairs = [(label, k) for label, scores in scores_by_prompt.items() for k in range(_length(scores, rule))]
    flat = {m: [scores_by_prompt[label][m][k] for label, k in pairs] for m in rule.metrics}
    allowed = (
        None
        if min_speedup is None
        else set(within_budget(range(0 if include_layer0 else 1, len(speedup)), speedup, min_speedup))
    )
    candidates = [
        i
        for i, (_, k) in enumerate(pairs)
        if (include_layer0 or k > 0)
        and (allowed is None or k in allowed)
        and all(is_finite(flat[m][i]) for m in rule.metrics)
    ]
    if not candidates:
        raise LayerpickError(f"rule {rule} has no (prompt, layer) pair where all its metrics are defined")
    objective = rule_objective(flat, rule, candidates)
    best = max(candidates, key=lambda i: (objective[i], -pairs[i][1]))
    near = [i for i in candidates if objective[i] >= objective[best] - tolerance - 1e-12]
    chosen = min(near, key=lambda i: (pairs[i][1], -objective[i]))
    by_label = {
        label: tuple(objective[i] for i, (name, _) in enumerate(pairs) if name == label) for label in scores_by_prompt
    }
    return PairChoice(
        pairs[chosen][0], pairs[chosen][1], pairs[best][0], pairs[best][1], str(rule), tolerance, by_label, min_speedup
    )


def _length(scores: dict[str, list[float | None]], rule: Rule) -> int:
    missing = [m for m in rule.metrics if m not in scores]
    if missing:
        raise LayerpickError(f"rule needs metrics that were not computed: {', '.join(missing)}")
    return len(scores[rule.metrics[0]])
