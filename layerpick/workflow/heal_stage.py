"""`run --heal-layers`: run's export stage made by `layerpick heal` instead of a plain cut (for a trained
embedder, whose plain cuts collapse): the cuts at the given layers healed on run's texts and the shallowest whose
held-out fidelity to the full model clears the line written as DIR/model, an ordinary export the bench stage
times like any other.

Owns which texts the heal reads (the heal's own, else run's `--fit-texts`, else `--calibration`, else the
embedded set, with `--field`), what the export stage's key adds for it (the heal's settings and its texts'
content), and the checks made before the first stage.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layerpick._util.filenames import METADATA_FILE
from layerpick.core.fingerprint import model_fingerprint
from layerpick.core.models import LoadOptions
from layerpick.errors import LayerpickError
from layerpick.exporting.metadata import ExportMetadata

if TYPE_CHECKING:
    from layerpick.healing.config import HealConfig
    from layerpick.workflow.run import RunConfig

SWEEP_FOLDER = ".model.heal-sweep"  # beside DIR/model: the heals a later run resumes or reuses


def heal_settings(config: "RunConfig", progress: bool) -> "HealConfig":
    """The heal run makes: its texts from the run's options unless the heal names its own."""
    heal, select = config.heal, config.select
    texts = {}
    if heal.fit_texts is None:
        source = select.fit_texts if select.fit_texts is not None else select.calibration
        texts = {"fit_texts": source, "field": heal.field if heal.field is not None else select.field}
    return dataclasses.replace(heal, **texts, overwrite=True, progress=progress)


def heal_key(config: "RunConfig") -> dict[str, Any] | None:
    """What the export stage's key adds for a heal: its settings and its texts' content (None without a heal)."""
    if config.heal is None:
        return None
    settings = dataclasses.asdict(heal_settings(config, progress=False))
    settings.pop("progress")
    fit_texts = settings["fit_texts"]
    if isinstance(fit_texts, (list, tuple)):  # several sources (the Python API): as the key reads back from JSON
        settings["fit_texts"] = list(fit_texts)
        return {**settings, "texts_content": [_texts_fingerprint(source) for source in fit_texts]}
    return {**settings, "texts_content": _texts_fingerprint(fit_texts)}


def _texts_fingerprint(source: str | None) -> str | None:
    """A file's or folder's content fingerprint; None for the embedded set or a stream (which is not re-read)."""
    if source is None:
        return None
    path = Path(source).expanduser()
    return model_fingerprint(str(path)) if path.is_file() or path.is_dir() else None


def check_heal(model: str, config: "RunConfig") -> None:
    """Before the first stage: a heal chooses the exported layer itself, from layers the model has."""
    if config.heal is None:
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


def heal_export(model: str, load_options: LoadOptions, config: "RunConfig", output: Path, progress: bool):
    """Heal into DIR/model (resuming or reusing the heals a stopped run kept) and read its layerpick.json."""
    from layerpick.healing import heal_or_sweep

    heal_or_sweep(model, None, output / "model", heal_settings(config, progress), load_options=load_options)
    return ExportMetadata.read(output / "model" / METADATA_FILE)
