"""The fit set of post-pooling transforms (which unlabelled texts a transform is fitted on), and the checks of a
transform request that run before any model loads.

By default the whole embedded calibration set (every text, not select's `--limit` sample: whitening to D
dimensions needs more than D texts); `--fit-texts` takes a user's own corpus in any format `--calibration`
takes (one text per line, JSONL with a `text` field, a task folder). At most FIT_LIMIT texts are kept, a
seeded sample, so the fit's cost stays bounded.
"""

from __future__ import annotations

import logging
from typing import Any

from layerpick.core.calibration import CalibrationSet, is_rereadable, load_calibration
from layerpick.core.transform import TransformError, TransformSpec
from layerpick.errors import CalibrationError

FIT_LIMIT = 2048
FIT_SEED = 0
# Fit texts per whitened dimension below which a whitening overfits its fit set: on the nine shared tasks, whiten-256
# fitted on 300 texts of a task (1.2 per dimension) lost 3-31 points on that task's classification and clustering
# for both decoders, while whiten-128 on the same 300 texts (2.3) lost 0-10 and on 566-584 STS texts both gained
# (benchmarks/results/transforms.md, "fitted on each task's own texts").
FIT_TEXTS_PER_DIM = 2

logger = logging.getLogger(__name__)


def load_fit_texts(source: str | None, *, field: str | None = None, limit: int | None = FIT_LIMIT) -> CalibrationSet:
    """The fit texts from `source` (None: the embedded calibration set; JSONL read from `field`, default `text`),
    cleaned, deduplicated, sampled."""
    try:
        return load_calibration(source, field=field, limit=limit, seed=FIT_SEED)
    except CalibrationError as error:
        raise CalibrationError(f"--fit-texts: {error}") from None


def report_fit_source(report: Any) -> str | None:
    """The fit source a select report recorded (None: the embedded set, or no report), refused in one line when a
    later command cannot read it again (a file moved away, a pipe): the user passes the same texts instead."""
    transform = getattr(report, "transform", None) or {}
    source = (transform.get("fit") or {}).get("source")
    if source in (None, "embedded"):
        return None
    if not is_rereadable(source):
        raise CalibrationError(
            f"the report's transform was fitted on {source}, which cannot be read again (not a file or folder "
            "that is still there): pass the same texts with --fit-texts"
        )
    return source


def report_fit_field(report: Any) -> str | None:
    """The JSONL field a select report's fit texts were read from (None: the default `text`, or not JSONL)."""
    transform = getattr(report, "transform", None) or {}
    return (transform.get("fit") or {}).get("field")


def fit_field(given_source: str | None, given_field: str | None, report: Any) -> str | None:
    """The field the fit texts are read from: --field, else, for the report's own fit texts (no --fit-texts),
    the field they were selected with."""
    if given_field is not None or given_source is not None:
        return given_field
    return report_fit_field(report)


def check_transform_representation(representation: str) -> None:
    """A transform is fitted on what the export ships; the raw residual stream is never exported."""
    if representation != "exported":
        raise TransformError(
            "--transform needs --representation exported: a transform is shipped in the "
            "export, and the raw residual stream is not what an export outputs"
        )


def prepare_fit(
    specs: "tuple[TransformSpec, ...]",
    source: str | None,
    representation: str,
    model: str | None,
    load_options: Any,
    field: str | None = None,
) -> CalibrationSet | None:
    """The fit texts for `specs` (None when every one is `none`), after checking, before the model loads, the
    representation, the fit set's size against each transform and, where config.json tells it without loading,
    the model's hidden size."""
    if all(spec.is_identity for spec in specs):
        return None
    check_transform_representation(representation)
    texts = load_fit_texts(source, field=field)
    from layerpick.core.models import peek_hidden_size

    width = peek_hidden_size(model, load_options) if model else None
    for spec in specs:
        spec.check(hidden_size=width, fit_count=len(texts.texts))
        warning = thin_fit_warning(spec, len(texts.texts), width)
        if warning:
            logger.warning(warning)
    return texts


def thin_fit_warning(spec: TransformSpec, count: int, width: int | None) -> str | None:
    """A warning when a whitening keeps more dimensions than its fit set supports well (fewer than
    FIT_TEXTS_PER_DIM texts per dimension); None otherwise."""
    if spec.kind != "whiten":
        return None
    dim = spec.dim if spec.dim is not None else (min(width, count - 1) if width else count - 1)
    if count >= FIT_TEXTS_PER_DIM * dim:
        return None
    return (
        f"{spec.label} keeps {dim} dimensions but is fitted on {count} texts, fewer than {FIT_TEXTS_PER_DIM} "
        f"per dimension: such a fit overfits its texts (measured at 1.2 per dimension: 3-31 points lost on "
        f"classification and clustering); give at least {FIT_TEXTS_PER_DIM * dim} fit texts or "
        f"whiten-{max(count // FIT_TEXTS_PER_DIM, 1)}"
    )


AUTO = "auto"
AUTO_WHITEN_DIM = 256  # the whitening `auto` scores beside no transform, for a model that is not an embedder


def expand_auto(
    value: str | None, model: str | None, load_options: Any, fit_source: str | None = None, field: str | None = None
) -> str | None:
    """`auto` in a transform list: `none` for a trained sentence embedder (a model that ships its own
    sentence-transformers pipeline); for any other model `none,whiten-D`, both scored, the rule choosing between
    them (benchmarks/results/transforms.md), with D = 256, or less where the hidden size (read from config.json
    where it is at hand) or the fit set (FIT_TEXTS_PER_DIM texts per dimension) allows less."""
    if value is None or AUTO not in [part.strip().lower() for part in value.split(",")]:
        return value
    from layerpick.core.models import peek_hidden_size, peek_is_embedder

    if model and peek_is_embedder(model, load_options):
        chosen = "none"
    else:
        width = (peek_hidden_size(model, load_options) if model else None) or AUTO_WHITEN_DIM
        dim = min(AUTO_WHITEN_DIM, width, len(load_fit_texts(fit_source, field=field).texts) // FIT_TEXTS_PER_DIM)
        chosen = f"none,whiten-{dim}" if dim >= 2 else "none"
    return ",".join(chosen if part.strip().lower() == AUTO else part for part in value.split(","))
