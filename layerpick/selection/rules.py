"""Selection rules: turn per-layer metric scores into one chosen layer.

Rules: `min-<metric>` / `max-<metric>` (explicit direction), `rank:<rule>,<rule>,...` (mean rank of several
signed metrics), and a cost-aware tolerance that takes the smallest layer whose objective is within a
fraction of the best, the objective being rescaled so the worst candidate layer is 0 and the best is 1
(quality traded for speed). Layer 0 (the embeddings) is a candidate only when asked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from layerpick.errors import LayerpickError
from layerpick.metrics import get_metric

# From benchmarks/results/rule_evidence.md: every layer of minilm-l6, smollm2-135m and gemma3-270m scored on
# nine MTEB tasks; min-infonce has the lowest mean regret (0.003, worst 0.009 mean-score points below the
# best layer) of all 15 rules; the paper's min-prompt-entropy / min-dataset-entropy / min-dime do not hold
# on the exported representation (mean regret 0.07 to 0.14).
DEFAULT_RULE = "min-infonce"


class UnknownRuleError(LayerpickError):
    """A rule string that does not parse."""


@dataclass(frozen=True)
class Term:
    direction: str  # "min" or "max"
    metric: str

    def __str__(self) -> str:
        return f"{self.direction}-{self.metric}"


@dataclass(frozen=True)
class Rule:
    terms: tuple[Term, ...]

    @property
    def metrics(self) -> list[str]:
        return [t.metric for t in self.terms]

    def __str__(self) -> str:
        if len(self.terms) == 1:
            return str(self.terms[0])
        return "rank:" + ",".join(str(t) for t in self.terms)


@dataclass(frozen=True)
class LayerChoice:
    """The chosen layer and why: the rule, its own optimum, and the tolerance traded for speed."""

    layer: int
    rule: str
    best_layer: int
    tolerance: float
    candidates: tuple[int, ...]
    objective: tuple[float | None, ...]  # per layer, 1 = best candidate under the rule, 0 = worst

    def describe(self) -> str:
        text = f"layer {self.layer} by rule {self.rule}"
        if self.layer != self.best_layer:
            text += f" (smallest layer within {self.tolerance:g} of the rule's best, layer {self.best_layer})"
        return text


def parse_rule(text: str) -> Rule:
    """`min-<metric>`, `max-<metric>` or `rank:<term>,<term>,...`; unknown metrics get "did you mean"."""
    text = text.strip()
    body = text[len("rank:"):] if text.startswith("rank:") else text
    parts = [p.strip() for p in body.split(",") if p.strip()]
    if not parts or (len(parts) > 1 and not text.startswith("rank:")):
        raise UnknownRuleError(_rule_help(text))
    return Rule(tuple(_parse_term(p, text) for p in parts))


def choose_layer(
    scores: dict[str, list[float | None]], rule: Rule, *, tolerance: float = 0.0, include_layer0: bool = False
) -> LayerChoice:
    """Apply `rule` to `scores` (metric -> L+1 values) and return the chosen layer."""
    if not 0.0 <= tolerance < 1.0:
        raise LayerpickError(f"--tolerance must be in [0, 1) (got {tolerance})")
    num = _num_layers(scores, rule)
    candidates = [k for k in range(0 if include_layer0 else 1, num + 1) if _defined(scores, rule, k)]
    if not candidates:
        raise LayerpickError(f"rule {rule} has no layer where all its metrics are defined")
    objective = _objective(scores, rule, candidates, num)
    best = max(candidates, key=lambda k: (objective[k], -k))
    chosen = min(k for k in candidates if objective[k] >= objective[best] - tolerance - 1e-12)
    return LayerChoice(chosen, str(rule), best, tolerance, tuple(candidates), tuple(objective))


def rule_objective(scores: dict[str, list[float | None]], rule: Rule, candidates: list[int]) -> list[float | None]:
    """Per index of `scores`' lists, the rule's goodness in [0, 1] over `candidates` (None elsewhere)."""
    return _objective(scores, rule, candidates, _num_layers(scores, rule))


def _objective(scores, rule: Rule, candidates: list[int], num: int) -> list[float | None]:
    """Per layer, the rule's goodness rescaled to [0, 1] over the candidates (mean of per-term ranks)."""
    total = [0.0] * (num + 1)
    for term in rule.terms:
        signed = {k: scores[term.metric][k] * (1 if term.direction == "max" else -1) for k in candidates}
        goodness = _rank01(signed) if len(rule.terms) > 1 else _minmax01(signed)
        for k in candidates:
            total[k] += goodness[k] / len(rule.terms)
    if len(rule.terms) > 1:
        total_minmax = _minmax01({k: total[k] for k in candidates})
        total = [total_minmax.get(k, 0.0) for k in range(num + 1)]
    return [total[k] if k in candidates else None for k in range(num + 1)]


def _minmax01(values: dict[int, float]) -> dict[int, float]:
    low, high = min(values.values()), max(values.values())
    span = high - low
    return {k: (v - low) / span if span > 0 else 1.0 for k, v in values.items()}


def _rank01(values: dict[int, float]) -> dict[int, float]:
    """Rank in [0, 1] (1 = highest), ties sharing their mean rank."""
    ordered = sorted(values.values())
    n = len(ordered)
    if n == 1:
        return {k: 1.0 for k in values}
    first = {v: ordered.index(v) for v in values.values()}
    count = {v: ordered.count(v) for v in values.values()}
    return {k: (first[v] + (count[v] - 1) / 2) / (n - 1) for k, v in values.items()}


def _defined(scores, rule: Rule, k: int) -> bool:
    return all(_finite(scores[m][k]) for m in rule.metrics)


def _finite(value) -> bool:
    return value is not None and math.isfinite(value)


def _num_layers(scores, rule: Rule) -> int:
    missing = [m for m in rule.metrics if m not in scores]
    if missing:
        raise LayerpickError(f"rule needs metrics that were not computed: {', '.join(missing)}")
    return len(scores[rule.metrics[0]]) - 1


def _parse_term(part: str, whole: str) -> Term:
    direction, _, metric = part.partition("-")
    if direction not in ("min", "max") or not metric:
        raise UnknownRuleError(_rule_help(whole))
    return Term(direction, get_metric(metric).name)


def _rule_help(text: str) -> str:
    return (
        f"unknown rule {text!r}: use min-<metric>, max-<metric> or rank:<rule>,<rule>,... "
        "(e.g. max-dime, rank:min-prompt-entropy,max-lidar)"
    )
