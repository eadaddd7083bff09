"""Registry of the layer-quality metrics: name, function, input and documented direction.

This module owns the catalogue of metric specifications (what each metric computes, what it needs as input
and which direction the paper documents as better) and the lookup/parsing of metric names. The maths lives in
sibling modules. Adding a metric is one entry here (or one `register_metric` call): scoring, the default metric
list, the reports and the selection rules all read the registry.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable

from layerpick.errors import LayerpickError

NEEDS = frozenset({"tokens", "pooled", "views"})
DIRECTIONS = frozenset({"min", "max"})


@dataclass(frozen=True)
class MetricSpec:
    """Description of one metric.

    Attributes:
        name: CLI name, e.g. ``"prompt-entropy"``.
        description: one-line summary.
        needs: inputs required, a subset of ``{"tokens", "pooled", "views"}``:
            per-text token states (T, D), pooled embeddings (N, D), or
            augmented-view embeddings (N, V, D).
        direction: ``"min"`` or ``"max"``, the direction reported as better.
        direction_note: caveat on how firmly the paper documents the direction.
        flat_under_whitening: True when whitening fixes the metric's value whatever the layer (the matrix
            entropy of whitened vectors is flat by construction); such a metric is not scored under whitening.
        compute: the metric itself, called with its input and the scoring settings (`ScoringConfig`):
            ``"tokens"``: ``compute(num_layers, settings)`` returns a token observer (`observe(layer, states,
            mask)` during the pass, then `result()` -> L+1 values and `skipped`);
            ``"pooled"``: ``compute(states (N, D), settings) -> float`` for one layer;
            ``"views"``: ``compute(views (N, V, D), settings) -> float`` for one layer.
    """

    name: str
    description: str
    needs: frozenset
    direction: str
    direction_note: str = ""
    compute: Callable[..., Any] | None = None
    flat_under_whitening: bool = False  # whitened vectors fix its value (left undefined under whitening)

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be 'min' or 'max', got {self.direction!r}")
        if len(self.needs) != 1 or not self.needs <= NEEDS:
            raise ValueError(f"needs must be one of {sorted(NEEDS)}")
        if not callable(self.compute):
            raise ValueError(f"metric {self.name!r} needs a compute function")

    @property
    def input(self) -> str:
        """The one input the metric reads: "tokens", "pooled" or "views"."""
        return next(iter(self.needs))


class UnknownMetricError(LayerpickError, ValueError):
    """Raised for a metric name that is not registered."""


# The built-in metrics' maths, imported when a metric is computed: the registry itself (read by the command line's
# options and by every config check) stays free of torch.
def _prompt_entropy(num_layers: int, s: Any) -> Any:
    from layerpick.metrics.token_observers import PromptEntropyObserver

    return PromptEntropyObserver(num_layers, s.alpha)


def _dataset_entropy(states: Any, s: Any) -> float:
    from layerpick.metrics.entropy import dataset_entropy

    return dataset_entropy(states, s.alpha)


def _dime(v: Any, s: Any) -> float:
    from layerpick.metrics.dime import dime

    return dime(v[:, 0], v[:, 1], s.dime_permutations, s.seed, s.alpha)


def _infonce(v: Any, s: Any) -> float:
    from layerpick.metrics.infonce import infonce

    return infonce(v[:, 0], v[:, 1], s.infonce_temperature)


def _lidar(v: Any, s: Any) -> float:
    from layerpick.metrics.lidar import lidar

    return lidar(v, s.lidar_delta)


def _curvature(num_layers: int, s: Any) -> Any:
    from layerpick.metrics.token_observers import CurvatureObserver

    return CurvatureObserver(num_layers)


_SPECS = (
    MetricSpec(
        name="prompt-entropy",
        description="Normalised matrix entropy of each text's token states, averaged over texts.",
        needs=frozenset({"tokens"}),
        direction="min",
        direction_note="Paper: the best (middle) layers show a prompt-entropy dip (compression).",
        compute=_prompt_entropy,
    ),
    MetricSpec(
        name="dataset-entropy",
        description="Normalised matrix entropy of the pooled embeddings of the whole text set.",
        needs=frozenset({"pooled"}),
        direction="min",
        direction_note=(
            "Paper: for Pythia, the layer of minimum dataset entropy does well (measured on raw streams); "
            "whether that holds for the exported representation is measured in benchmarks/rule_evidence.py."
        ),
        compute=_dataset_entropy,
        flat_under_whitening=True,
    ),
    MetricSpec(
        name="dime",
        description="Difference of matrix entropies between two augmented views (shared info).",
        needs=frozenset({"views"}),
        direction="min",
        direction_note="Paper: for Pythia, the layer of minimum DiME does well (measured on raw streams).",
        compute=_dime,
    ),
    MetricSpec(
        name="infonce",
        description="Symmetric InfoNCE loss between two augmented views, in nats.",
        needs=frozenset({"views"}),
        direction="min",
        compute=_infonce,
    ),
    MetricSpec(
        name="lidar",
        description="LiDAR entropy (log effective rank) of between-text vs within-view scatter.",
        needs=frozenset({"views"}),
        direction="max",
        compute=_lidar,
    ),
    MetricSpec(
        name="curvature",
        description="Mean turning angle of each text's token trajectory, averaged over texts.",
        needs=frozenset({"tokens"}),
        direction="min",
        direction_note="Lower curvature = straighter trajectory (Hosseini & Fedorenko 2023).",
        compute=_curvature,
    ),
)
_REGISTRY = {spec.name: spec for spec in _SPECS}


def list_metrics() -> list[MetricSpec]:
    """All registered metrics, in registry order."""
    return list(_REGISTRY.values())


def register_metric(spec: MetricSpec) -> MetricSpec:
    """Add a metric (or replace one of the same name); it is then scored, reported and usable in rules."""
    _REGISTRY[spec.name] = spec
    return spec


def unregister_metric(name: str) -> None:
    """Remove a metric added with `register_metric`."""
    _REGISTRY.pop(name, None)


def get_metric(name: str) -> MetricSpec:
    """Look up a metric by exact name.

    Raises:
        UnknownMetricError: with a "did you mean" hint and the known names.
    """
    spec = _REGISTRY.get(name)
    if spec is None:
        raise UnknownMetricError(_unknown_message(name))
    return spec


def parse_metrics(text: str) -> list[MetricSpec]:
    """Parse a comma-separated list of names, e.g. ``"dime, lidar"``.

    Whitespace and empty items are ignored; duplicates keep their first place.

    Raises:
        UnknownMetricError: for any unknown name.
        ValueError: when no name is given.
    """
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise UnknownMetricError(f"no metric names given; known metrics: {', '.join(_REGISTRY)}")
    specs = [get_metric(name) for name in dict.fromkeys(names)]
    return specs


def _unknown_message(name: str) -> str:
    """Error text for an unknown metric name."""
    message = f"unknown metric {name!r}"
    close = difflib.get_close_matches(name, list(_REGISTRY), n=1, cutoff=0.5)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return f"{message} (known metrics: {', '.join(_REGISTRY)})"


__all__ = [
    "MetricSpec",
    "UnknownMetricError",
    "get_metric",
    "list_metrics",
    "parse_metrics",
    "register_metric",
    "unregister_metric",
]
