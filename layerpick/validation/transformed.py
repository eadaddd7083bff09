"""Post-pooling transforms in validation: each (template, transform) pair is one more `Setup`.

A transformed setup shares its template's layer source (the one pass and its store); the fit texts are
encoded through that same source, so their pooled states are exactly what the export's fit sees, and each
layer's map is fitted from them (`core.transform.fit`). Its results are named apart from the untransformed
ones (`<model>__<transform>-<fit hash>__layer-<k>`), so a different fit set never reuses a stale result.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from layerpick.core.calibration import CalibrationSet
from layerpick.core.transform import TransformSpec, fit, fit_set_of
from layerpick.validation.sources import Setup


def transformed_setups(
    setups: Sequence[Setup], specs: Sequence[TransformSpec], fit_texts: CalibrationSet | None
) -> list[Setup]:
    """Every template's setup under every transform, template-major; `none` is the setup itself."""
    return [
        setup if spec.is_identity else transformed_setup(setup, spec, fit_texts) for setup in setups for spec in specs
    ]


def transformed_setup(setup: Setup, spec: TransformSpec, fit_texts: CalibrationSet) -> Setup:
    """`setup` with `spec` fitted at every layer on `fit_texts` (encoded, and stored, by its own source)."""
    texts = fit_texts.texts
    spec.check(hidden_size=setup.embed_dim, fit_count=len(texts))
    setup.source.ensure(texts)
    maps = {layer: fit(spec, setup.source.store.layer(texts, slot)) for layer, slot in setup.slots.items()}
    fit_set = fit_set_of(texts, fit_texts.source, fit_texts.field)
    out_dim = next(iter(maps.values())).out_dim
    described = {**spec.to_json(), "fit": fit_set.to_json(), "output_dim": out_dim}
    tag = f"{spec.label}-{fit_set.sha256[:8]}"
    return dataclasses.replace(
        setup,
        label=f"{setup.label}__{tag}",
        embed_dim=out_dim,
        transforms=maps,
        experiment={**setup.experiment, "transform": spec.label, "fit_sha256": fit_set.sha256},
        facts={**setup.facts, "transform": described},
    )
