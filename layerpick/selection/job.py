"""The select job: calibration texts -> every layer scored -> a layer chosen -> a `SelectReport`.

`run_select` computes everything before anything is written, so a failure leaves no partial report.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from layerpick._util.locks import output_lock
from layerpick._util.outputs import check_output_location, model_output_dir
from layerpick._util.versions import library_versions
from layerpick.core.calibration import CalibrationSet, load_calibration
from layerpick.core.fit_texts import expand_auto, prepare_fit
from layerpick.core.transform import DEFAULT_TRANSFORM, TransformSpec, parse_transforms
from layerpick.core.collect import effective_max_length
from layerpick.core.cost import LayerCosts, layer_costs
from layerpick.core.models import LoadOptions, load_model, peek_is_embedder
from layerpick.core.prompts import DEFAULT_PROMPT, parse_prompts
from layerpick.metrics import get_metric
from layerpick.frontier.choice import frontier
from layerpick.selection.config import SelectConfig
from layerpick.selection.prompt_choice import choose_pair
from layerpick.selection.report import write_report
from layerpick.selection.result import SelectReport, finite_or_none
from layerpick.selection.rules import (
    check_min_speedup,
    choose_layer,
    parse_rule,
    within_budget,
)
from layerpick.selection.scoring import check_inputs, score_transformed


def run_select(
    model: str, load_options: LoadOptions = LoadOptions(), config: SelectConfig = SelectConfig()
) -> SelectReport:
    """Score every layer of `model` on the calibration set and choose one; with several prompt templates, every
    (template, layer) pair, from one pass per template, and choose a pair."""
    started = time.perf_counter()
    metrics = config.check()
    load_options.check()
    prompts = parse_prompts(DEFAULT_PROMPT if config.prompt is None else config.prompt)
    # the calibration first: its own errors then name it, not the fit set drawn from it by default
    texts = load_calibration(config.calibration, field=config.field, limit=config.limit, seed=config.scoring.seed)
    transforms = parse_transforms(
        expand_auto(
            DEFAULT_TRANSFORM if config.transform is None else config.transform,
            model,
            load_options,
            _fit_source(config),
            config.field,
        )
    )
    fit_texts = select_fit_texts(transforms, config, model, load_options)
    rule = parse_rule(config.rule)
    check_min_speedup(config.min_speedup)
    check_inputs(texts.texts, metrics, config.scoring)
    load_start = time.perf_counter()
    loaded = load_model(model, load_options)
    load_s = time.perf_counter() - load_start
    costs = layer_costs(loaded.model)
    if config.min_speedup is not None:  # a budget no layer meets fails before the forward passes
        within_budget(
            range(0 if config.include_layer0 else 1, loaded.num_layers + 1), costs.ideal_speedup, config.min_speedup
        )
    results, variants = {}, {}
    for p in prompts:
        scored = score_transformed(
            loaded,
            texts.texts,
            metrics,
            dataclasses.replace(config.collect, prompt=p),
            config.scoring,
            transforms,
            fit_texts,
        )
        for spec in transforms:
            label = variant_label(p.label, spec)
            results[label], variants[label] = scored[spec.label], p
    if len(results) == 1:
        label = next(iter(results))
        choice = choose_layer(
            results[label].scores,
            rule,
            tolerance=config.tolerance,
            include_layer0=config.include_layer0,
            speedup=costs.ideal_speedup,
            min_speedup=config.min_speedup,
        )
        layer, best_layer, described, by_prompt = choice.layer, choice.best_layer, choice.describe(), None
    else:
        pair = choose_pair(
            {label: r.scores for label, r in results.items()},
            rule,
            tolerance=config.tolerance,
            include_layer0=config.include_layer0,
            speedup=costs.ideal_speedup,
            min_speedup=config.min_speedup,
        )
        label, layer, described = pair.prompt, pair.layer, pair.describe()
        best_layer = pair.best_layer if pair.best_prompt == pair.prompt else None
        by_prompt = {
            label: {
                "template": p.template,
                "pooling": results[label].pooling,
                "transform": results[label].transform,
                "scores": _finite_scores(results[label].scores),
                "rule_objective": list(pair.objective[label]),
            }
            for label, p in variants.items()
        }
    result = results[label]
    chosen = variants[label]
    unbounded = choose_layer(result.scores, rule, include_layer0=config.include_layer0)  # objective, every layer
    timings = {
        "load_s": load_s,
        **_summed({id(r.timings): r.timings for r in results.values()}.values()),
        "total_s": time.perf_counter() - started,
    }
    return SelectReport(
        model=model,
        model_path=loaded.path,
        revision=load_options.revision,
        num_layers=loaded.num_layers,
        family=loaded.family.name,
        representation=config.collect.representation,
        pooling=result.pooling,
        rule=str(rule),
        tolerance=config.tolerance,
        include_layer0=config.include_layer0,
        min_speedup=config.min_speedup,
        cost=costs.to_json(),
        objective=[finite_or_none(v) for v in unbounded.objective],
        frontier=frontier(unbounded.objective, costs.ideal_speedup, unbounded.candidates),
        selected_layer=layer,
        rule_best_layer=best_layer,
        choice=described,
        scores=_finite_scores(result.scores),
        prompt=chosen.to_json(),
        by_prompt=by_prompt,
        transform=result.transform,
        directions={m.name: get_metric(m.name).direction for m in metrics},
        skipped_texts=result.skipped_texts,
        calibration=texts.describe(),
        seed=config.scoring.seed,
        views=config.scoring.views,
        alpha=config.scoring.alpha,
        max_length=effective_max_length(loaded, config.collect.max_length),
        dtype=load_options.dtype,
        device=str(loaded.device),
        notes=[*loaded.notes, *heal_hint(model, load_options, layer, loaded.num_layers, costs)],
        versions=library_versions(),
        timings={k: round(v, 3) for k, v in timings.items()},
    )


def heal_hint(model: str, load_options: LoadOptions, layer: int, num_layers: int, costs: LayerCosts) -> list[str]:
    """What healing would buy, for a trained sentence embedder whose last layer is chosen (a plain cut of such a
    model loses most of its quality: it was trained to be used whole)."""
    if layer != num_layers or num_layers < 2 or not peek_is_embedder(model, load_options):
        return []
    half = num_layers // 2
    return [
        f"a trained sentence embedder is best used whole, so its last layer is chosen; to make it faster, heal a cut: "
        f"`layerpick heal {model} --layer {half} --fit-texts YOUR_TEXTS --output DIR` trains a {half}-layer "
        f"cut (started from {half} of its layers spread over the depth) to give the full model's vectors back "
        f"({costs.speedup(half):.1f}x ideal speed-up), best on "
        "thousands of your own texts (`--layers all` instead heals every cut and keeps the shallowest that stays "
        "close to the full model on held-out texts); `layerpick validate --exported DIR --documents-by "
        f"{model}` then scores it as a query encoder for an index the full model built"
    ]


def variant_label(prompt_label: str, spec: TransformSpec) -> str:
    """`none`, `eol`, `none+whiten-256`: a template's label, with its transform when there is one."""
    return prompt_label if spec.is_identity else f"{prompt_label}+{spec.label}"


def select_fit_texts(
    transforms, config: SelectConfig, model: str | None = None, load_options: LoadOptions = LoadOptions()
) -> CalibrationSet | None:
    """The fit set (None when no transform needs one): --fit-texts, else the calibration source; checked
    against every transform before loading."""
    return prepare_fit(
        tuple(transforms), _fit_source(config), config.collect.representation, model, load_options, config.field
    )


def _fit_source(config: SelectConfig) -> str | None:
    return config.fit_texts if config.fit_texts is not None else config.calibration


def _finite_scores(scores: dict[str, list]) -> dict[str, list]:
    return {name: [finite_or_none(v) for v in values] for name, values in scores.items()}


def _summed(timings) -> dict[str, float]:
    total: dict[str, float] = {}
    for one in timings:
        for key, value in one.items():
            total[key] = total.get(key, 0.0) + value
    return total


def select_and_write(
    model: str, load_options: LoadOptions, config: SelectConfig, output: Path | None
) -> tuple[SelectReport, list[Path]]:
    """Check the output location first, then select, then write the report there (the folder locked
    throughout, so two selects never interleave their files)."""
    output = Path(output) if output is not None else model_output_dir(model)
    check_output_location(output, "--output")
    with output_lock(output):
        report = run_select(model, load_options, config)
        return report, write_report(report, output)
