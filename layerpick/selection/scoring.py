"""Score every layer with the chosen unsupervised metrics, running only the passes they need.

Passes: the calibration texts themselves (token-level metrics through observers, and pooled states for
dataset-level ones), and one pass over V augmented views of every text when a view metric is asked for
(DiME and InfoNCE use the first two views, LiDAR all V). Each pass is shared by every metric that needs it.

With post-pooling transforms (`score_transformed`), one more pass pools the fit texts, each transform is
fitted per layer on them, and the pooled and view metrics are computed on the transformed vectors of the same
passes (token-level metrics read token states, which a post-pooling transform does not touch; a metric whose
value is fixed by whitening, such as the entropy of whitened vectors, is left undefined under it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from layerpick._util.progress import progress_bar
from layerpick.core.calibration import CalibrationSet
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.transform import IDENTITY, TransformSpec, fit_layers, fit_set_of
from layerpick.core.models import LoadedModel
from layerpick.core.prompts import as_prompt, default_pooling
from layerpick.errors import CalibrationError, LayerpickError
from layerpick.metrics import MetricSpec
from layerpick.selection.scoring_config import DEFAULT_VIEWS as DEFAULT_VIEWS
from layerpick.selection.scoring_config import ScoringConfig as ScoringConfig  # its home; imported from here too
from layerpick.selection.views import make_views

MIN_TEXTS = 8


@dataclass
class LayerScores:
    """metric name -> L+1 values (index = layer; None where undefined), with what it took to get them."""

    scores: dict[str, list[float | None]]
    skipped_texts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    pooling: str = "mean"
    transform: dict | None = None  # the transform the pooled and view metrics were computed under


class _TimedObserver:
    """Wraps an observer and adds the time it spends to a shared counter (metric time, not forward time)."""

    def __init__(self, observer, clock: dict[str, float]):
        self.observer, self.clock = observer, clock

    def observe(self, layer, states, mask):
        start = time.perf_counter()
        self.observer.observe(layer, states, mask)
        self.clock["metrics_s"] += time.perf_counter() - start


def score_layers(
    loaded: LoadedModel,
    texts: Sequence[str],
    metrics: Sequence[MetricSpec],
    collect_config: CollectConfig = CollectConfig(),
    config: ScoringConfig = ScoringConfig(),
) -> LayerScores:
    """All `metrics` for every layer of `loaded` over `texts`: each metric's registry entry says what it reads."""
    return score_transformed(loaded, texts, metrics, collect_config, config)[IDENTITY.label]


def score_transformed(
    loaded: LoadedModel,
    texts: Sequence[str],
    metrics: Sequence[MetricSpec],
    collect_config: CollectConfig = CollectConfig(),
    config: ScoringConfig = ScoringConfig(),
    transforms: Sequence[TransformSpec] = (IDENTITY,),
    fit_texts: CalibrationSet | None = None,
) -> dict[str, LayerScores]:
    """`score_layers` under every transform (label -> scores), from the same passes; the transforms are fitted
    per layer on `fit_texts` (required unless every transform is `none`)."""
    check_inputs(texts, metrics, config)
    clock = {"forward_s": 0.0, "metrics_s": 0.0, "fit_s": 0.0}
    token_scores: dict[str, list[float | None]] = {}
    skipped: dict[str, int] = {}
    pooling = collect_config.pooling or default_pooling(loaded.default_pooling, as_prompt(collect_config.prompt))
    by_input = {kind: [m for m in metrics if m.input == kind] for kind in ("tokens", "pooled", "views")}
    pooled = views = None
    if by_input["tokens"] or by_input["pooled"]:
        pooled, pooling = _main_pass(
            loaded, texts, by_input["tokens"], collect_config, config, clock, token_scores, skipped
        )
    if by_input["views"]:
        views = _view_pass(loaded, texts, collect_config, config, clock)
    fitted = _fit_transforms(loaded, transforms, fit_texts, collect_config, clock)
    out = {}
    for spec in transforms:
        scores = dict(token_scores)
        maps, described = fitted.get(spec.label, (None, None))
        for metric in by_input["pooled"]:
            scores[metric.name] = _transformed_metric(metric, pooled, maps, spec, config, clock, collect_config)
        for metric in by_input["views"]:
            scores[metric.name] = _transformed_metric(metric, views, maps, spec, config, clock, collect_config)
        out[spec.label] = LayerScores({m.name: scores[m.name] for m in metrics}, skipped, clock, pooling, described)
    return out


def _main_pass(loaded, texts, token_metrics, collect_config, config, clock, scores, skipped):
    observers = {m.name: m.compute(loaded.num_layers, config) for m in token_metrics}
    observer_clock = {"metrics_s": 0.0}
    start = time.perf_counter()
    states = collect(loaded, texts, collect_config, [_TimedObserver(o, observer_clock) for o in observers.values()])
    clock["forward_s"] += time.perf_counter() - start - observer_clock["metrics_s"]
    clock["metrics_s"] += observer_clock["metrics_s"]
    for name, observer in observers.items():
        scores[name] = observer.result()
        skipped[name] = observer.skipped
    return states.pooled, states.pooling


def _view_pass(loaded, texts, collect_config, config, clock) -> torch.Tensor:
    num_views = max(config.views, 2)
    views = make_views(list(texts), num_views, config.seed)
    flat = [view for per_text in views for view in per_text]
    start = time.perf_counter()
    pooled = collect(loaded, flat, collect_config).pooled  # (L+1, N*V, D)
    clock["forward_s"] += time.perf_counter() - start
    return pooled.reshape(pooled.shape[0], len(texts), num_views, pooled.shape[-1])


def _fit_transforms(loaded, transforms, fit_texts, collect_config, clock) -> dict[str, tuple[list, dict]]:
    """label -> (a map per layer, its description), fitted from one pass over the fit texts."""
    fitting = [spec for spec in transforms if not spec.is_identity]
    if not fitting:
        return {}
    if fit_texts is None:
        raise LayerpickError("a transform needs fit texts")
    start = time.perf_counter()
    states = collect(loaded, loaded.pipeline.prepare(fit_texts.texts), collect_config).pooled
    clock["forward_s"] += time.perf_counter() - start
    start = time.perf_counter()
    fit_set = fit_set_of(fit_texts.texts, fit_texts.source, fit_texts.field)
    fitted = {}
    for spec in fitting:
        spec.check(hidden_size=states.shape[-1], fit_count=states.shape[1])
        maps = fit_layers(spec, states)
        fitted[spec.label] = (maps, {**spec.to_json(), "fit": fit_set.to_json(), "output_dim": maps[0].out_dim})
    clock["fit_s"] += time.perf_counter() - start
    return fitted


def _transformed_metric(
    metric: MetricSpec, per_layer: torch.Tensor, maps, spec: TransformSpec, config: ScoringConfig, clock, collect_config
) -> list[float | None]:
    """One metric at every layer, on the layer's vectors under its fitted map (untransformed for `none`)."""
    if maps is not None and spec.kind == "whiten" and metric.flat_under_whitening:
        return [None] * per_layer.shape[0]
    layers = per_layer if maps is None else torch.stack([_apply(m, layer) for m, layer in zip(maps, per_layer)])
    return _per_layer(metric.name, layers, _bound(metric, config), clock, collect_config.progress)


def _apply(affine, states: torch.Tensor) -> torch.Tensor:
    """The map on pooled (N, D) or view (N, V, D) states, back in float32."""
    flat = states.reshape(-1, states.shape[-1])
    return affine.apply_torch(flat).float().reshape(*states.shape[:-1], affine.out_dim)


def _bound(metric: MetricSpec, config: ScoringConfig) -> Callable[[torch.Tensor], float]:
    return lambda states: metric.compute(states, config)


def _per_layer(label: str, per_layer: torch.Tensor, function, clock, progress: bool) -> list[float | None]:
    start = time.perf_counter()
    values: list[float | None] = []
    with progress_bar(f"metric: {label}", per_layer.shape[0], progress) as advance:
        for layer in per_layer:
            values.append(float(function(layer)))
            advance()
    clock["metrics_s"] += time.perf_counter() - start
    return values


def check_inputs(texts: Sequence[str], metrics: Sequence[MetricSpec], config: ScoringConfig) -> None:
    """What the metrics need of the texts and views, checked before (and again after) the model loads."""
    dataset_level = [m.name for m in metrics if m.input in ("pooled", "views")]
    if dataset_level and len(texts) < MIN_TEXTS:
        raise CalibrationError(
            f"{', '.join(dataset_level)} need at least {MIN_TEXTS} calibration texts (got {len(texts)})"
        )
    if "lidar" in [m.name for m in metrics] and config.views < 2:
        raise CalibrationError(f"lidar needs at least 2 views per text (got --views {config.views})")
