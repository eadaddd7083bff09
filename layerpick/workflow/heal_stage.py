"""run's export stage made by `layerpick heal` instead of a plain cut (for a trained embedder, whose plain cuts
collapse): the cuts at the given layers healed on run's texts and the shallowest whose held-out fidelity to the full
model clears the line written as DIR/model, an ordinary export the bench stage times like any other.

Owns when run heals (`--heal-layers auto`, the default: when select keeps the last layer of a trained embedder,
at `plan.default_cuts`; a list: always; `none`: never), which texts the heal reads (the heal's own, else run's
`--fit-texts`, else `--calibration`, else the embedded set, with `--field`), the plan said before any training
(`healing.plan`: texts and epochs fitted to `--heal-minutes`, kept in DIR/heal-plan.json so that a resumed run
heals the same texts), what the export stage's key adds for it, and the checks made before the first stage.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import logging
import math

from layerpick._util.atomic import write_json_atomic
from layerpick._util.filenames import METADATA_FILE
from layerpick.core.fingerprint import same_place, texts_fingerprint
from layerpick.core.models import LoadOptions, peek_is_embedder
from layerpick.errors import LayerpickError, ReportFormatError
from layerpick.exporting.metadata import ExportMetadata
from layerpick.healing import DEFAULT_MAX_LOSS, HealPlan, default_cuts
from layerpick.workflow.config import AUTO

if TYPE_CHECKING:
    from layerpick.healing.config import HealConfig
    from layerpick.selection.result import SelectReport
    from layerpick.workflow.run import RunConfig

logger = logging.getLogger(__name__)

SWEEP_FOLDER = ".model.heal-sweep"  # beside DIR/model: the heals a later run resumes or reuses
PLAN_FILE = "heal-plan.json"  # beside DIR/model: the texts and epochs a resumed run heals with


def heal_settings(config: "RunConfig", progress: bool) -> "HealConfig":
    """The heal run makes: its texts from the run's options unless the heal names its own."""
    heal, select = config.heal, config.select
    texts = {}
    if heal.fit_texts is None:
        source = select.fit_texts if select.fit_texts is not None else select.calibration
        texts = {"fit_texts": source, "field": heal.field if heal.field is not None else select.field}
    graph = {"format": config.format, "quantize": config.quantize}
    return dataclasses.replace(heal, **texts, **graph, overwrite=True, progress=progress)


def heal_key(config: "RunConfig") -> dict[str, Any] | None:
    """What the export stage's key adds for a heal: its settings and its texts' content (None without a heal)."""
    if config.heal is None:
        return None
    settings = dataclasses.asdict(heal_settings(config, progress=False))
    settings.pop("progress")
    fit_texts = settings["fit_texts"]
    if isinstance(fit_texts, (list, tuple)):  # several sources (the Python API): as the key reads back from JSON
        settings["fit_texts"] = [same_place(source) for source in fit_texts]
        return {**settings, "texts_content": [texts_fingerprint(source) for source in fit_texts]}
    settings["fit_texts"] = same_place(fit_texts) if fit_texts is not None else None
    return {**settings, "texts_content": texts_fingerprint(fit_texts)}


def check_heal(model: str, config: "RunConfig") -> None:
    """Before the first stage: a heal chooses the exported layer itself, from layers the model has."""
    if config.heal is None:
        return
    config.heal.check_numbers(prefix="heal-")
    minutes = config.heal_minutes
    if minutes is not None and not (math.isfinite(minutes) and minutes > 0):
        raise LayerpickError(f"--heal-minutes must be a positive number of minutes (got {minutes:g})")
    if config.heal.layers == AUTO:  # the layers are known once select has run; the line and the blocks now
        from layerpick.healing import check_max_loss, check_sweep_blocks

        check_max_loss(DEFAULT_MAX_LOSS if config.heal.max_loss is None else config.heal.max_loss, "--heal-max-loss")
        check_sweep_blocks(config.heal.blocks, "--heal-blocks")
        return
    if config.choice.validated:
        raise LayerpickError(
            "--heal-layers chooses the exported layer by healed fidelity; drop --choose validated / --max-loss"
        )
    if config.heal.layers is None:
        raise LayerpickError("a heal in run needs the layers to heal (--heal-layers 2,3,4 or all)")
    if config.heal.epochs < 1:
        raise LayerpickError(f"--heal-epochs must be at least 1 (got {config.heal.epochs})")
    from layerpick.healing import check_sweep

    check_sweep(
        model, config.heal.layers, config.heal.max_loss, LoadOptions(), prefix="heal-", blocks=config.heal.blocks
    )


def resolve(model: str, config: "RunConfig", select: "SelectReport", load_options: LoadOptions) -> "HealConfig | None":
    """The heal the export stage runs, its layers named, or None for a plain cut. `auto` heals where select kept
    the last layer of a trained embedder (its plain cuts collapse) and no validated choice was asked for."""
    heal = config.heal
    if heal is None or heal.layers != AUTO:
        return heal
    if config.choice.validated or select.selected_layer < select.num_layers or select.num_layers < 2:
        return None
    if not peek_is_embedder(model, load_options):
        return None
    return dataclasses.replace(heal, layers=",".join(map(str, default_cuts(select.num_layers))))


def heal_export(
    model: str,
    load_options: LoadOptions,
    config: "RunConfig",
    heal: "HealConfig",
    select: "SelectReport",
    output: Path,
    key: str,
    progress: bool,
):
    """Say the plan, heal into DIR/model (resuming or reusing the heals a stopped run kept), read its layerpick.json."""
    from layerpick.healing import heal_or_sweep

    settings = heal_settings(dataclasses.replace(config, heal=heal), progress)
    if settings.fit_texts is None:
        logger.warning(
            "no --fit-texts: healing on the embedded calibration set (general English sentences); the texts of the "
            "corpus the model will serve heal it far better (--fit-texts FILE or a BEIR folder)"
        )
    if peek_is_embedder(model, load_options):
        plan = planned(settings, config.heal_minutes, select, output / PLAN_FILE, key, load_options)
        logger.warning(plan.line())
        fitted = {"epochs": plan.epochs, "max_texts": plan.texts if plan.texts < plan.available else None}
        settings = dataclasses.replace(settings, **fitted)
    else:  # a raw model's teacher is its own export at layer L, made by the heal: no probe of it yet
        logger.warning(
            "heal: the cuts at %s of %s, %d epochs (no time estimate for a raw model's heal yet)",
            heal.layers,
            select.num_layers,
            heal.epochs,
        )
    heal_or_sweep(model, None, output / "model", settings, load_options=load_options)
    return ExportMetadata.read(output / "model" / METADATA_FILE)


def planned(
    heal: "HealConfig",
    budget: float | None,
    select: "SelectReport",
    path: Path,
    key: str,
    load_options: LoadOptions,
) -> HealPlan:
    """The plan kept for this export key (a resumed run heals the same texts), or a new one from a speed probe."""
    from layerpick.healing import parse_layers

    try:
        kept = HealPlan.read(path)
        if kept.extra.get("key") == key:
            return kept
    except ReportFormatError:
        pass
    from layerpick.core.devices import resolve_device
    from layerpick.healing import probe_plan

    layers = parse_layers(heal.layers, select.num_layers, option="--heal-layers")
    device = resolve_device(load_options.device)
    plan = probe_plan(heal, budget, select.model_path or select.model, select.num_layers, device, layers)
    plan = dataclasses.replace(plan, extra={**plan.extra, "key": key})
    write_json_atomic(path, plan.to_json())
    return plan


def read_plan(output: Path) -> HealPlan | None:
    """The plan a run's heal was made with (None when there is none, or it cannot be read)."""
    try:
        return HealPlan.read(output / PLAN_FILE)
    except ReportFormatError:
        return None
