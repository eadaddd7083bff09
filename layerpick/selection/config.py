"""The settings of one select run (`SelectConfig`): the calibration texts, the metrics, the rule, how texts are
pooled and scored, and the prompt templates and transforms scored side by side."""

from __future__ import annotations

from dataclasses import dataclass

from layerpick.core.calibration import check_field
from layerpick.core.collect_config import CollectConfig
from layerpick.errors import LayerpickError
from layerpick.metrics import MetricSpec, get_metric, list_metrics, parse_metrics
from layerpick.selection.rules import DEFAULT_RULE, parse_rule
from layerpick.selection.scoring_config import ScoringConfig

# Every registered metric, in registry order (the default of --metrics).
ALL_METRICS = ",".join(m.name for m in list_metrics())


# A seeded sample of 256 calibration texts: the size at which the default rule was measured
# (benchmarks/results/rule_evidence.md); scoring time grows with it (each text is embedded 1 + views times).
DEFAULT_LIMIT = 256


@dataclass(frozen=True)
class SelectConfig:
    calibration: str | None = None
    field: str | None = None  # --field: the text's field in JSONL calibration and fit texts (None: `text`)
    limit: int | None = DEFAULT_LIMIT
    metrics: str = ALL_METRICS
    rule: str = DEFAULT_RULE
    tolerance: float = 0.0
    include_layer0: bool = False
    min_speedup: float | None = None  # only layers with at least this ideal speed-up are candidates
    collect: CollectConfig = CollectConfig()
    scoring: ScoringConfig = ScoringConfig()
    prompt: str | None = None  # --prompt: a template, or names such as "none,eol" (None: DEFAULT_PROMPT)
    transform: str | None = None  # --transform: names such as "none,whiten-256" (None: DEFAULT_TRANSFORM)
    fit_texts: str | None = None  # --fit-texts: the texts transforms are fitted on (None: the calibration set)

    def check(self) -> list[MetricSpec]:
        """Every option checked before a model is loaded; returns the metrics to compute (the requested ones
        plus those the rule needs)."""
        rule = parse_rule(self.rule)
        requested = parse_metrics(self.metrics)
        names = {m.name for m in requested}
        if not (isinstance(self.tolerance, (int, float)) and 0.0 <= self.tolerance < 1.0):
            raise LayerpickError(f"--tolerance must be in [0, 1) (got {self.tolerance})")
        if self.limit is not None and self.limit < 1:
            raise LayerpickError(f"--limit must be at least 1 (got {self.limit})")
        self.collect.check()
        self.scoring.check()
        check_field(self.field, {"--calibration": self.calibration, "--fit-texts": self.fit_texts})
        return requested + [get_metric(name) for name in rule.metrics if name not in names]
