"""The checks of `layerpick export --format static`, made before anything is computed, and the plan they give.

Owns: the request checked before any model loads (the optional `static` extra, the PCA dimension, and what a
static model cannot carry: a prompt template, a post-pooling transform, a sequence length, a model spread over
devices); the loaded model checked before the distillation (a tokenizer model2vec reads, the dimension within
the hidden size) and the `StaticPlan` it gives; the table's size on disk; and model2vec's and skeletoken's
logging quietened while they run. The distillation itself is `static`.

A template cannot be distilled: model2vec passes single tokens, and a text's row is a mean of token rows, so
nothing can wrap a text in a template; a request with one is refused. So is a transform (the table has its
own PCA, `--static-dims`), with one exception: from a select report whose pick is under a transform (what
`--transform auto` often picks for a language model), the report's layer is distilled without it, as the
evidence advises (benchmarks/results/static.md: that layer, untransformed, gave the best table measured on each
packaged model), and a warning says so.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import Iterator

from layerpick._util.extras import missing_extra
from layerpick.errors import LayerpickError

logger = logging.getLogger(__name__)

FORMAT = "static"
PACKAGES = ("model2vec", "skeletoken")  # the `static` extra of pyproject.toml
DEFAULT_DIMS = 256  # model2vec's default PCA dimension (the hidden size where that is smaller)
POOLINGS = {"mean": "mean", "cls": "first", "lasttoken": "last"}  # layerpick's pooling -> model2vec's
QUIET_LOGGERS = ("model2vec", "skeletoken")


class StaticExportError(LayerpickError):
    """A static export that cannot be made: the extra is missing, the request or the model does not fit."""


@dataclass(frozen=True)
class StaticRequest:
    """`--format static` as asked, checked before the model loads; `dims` None: the default."""

    dims: int | None


@dataclass(frozen=True)
class StaticPlan:
    """The distillation, once the model is loaded: PCA dimension, model2vec's pooling, the hidden size."""

    dims: int
    pooling: str
    hidden_size: int


def require() -> None:
    """A one-line error naming the extra when model2vec (or what it distils with) is not installed."""
    message = missing_extra("static", PACKAGES, "--format static")
    if message:
        raise StaticExportError(message)


def table_plan(config, plan):
    """The export plan a static table distils: from a select report whose pick is under a transform, the same
    layer without the transform (the table has its own PCA); any other plan, unchanged."""
    if config.format != FORMAT or plan.report is None or plan.transform.is_identity or config.transform is not None:
        return plan
    from layerpick.core.transform import IDENTITY

    logger.warning(
        "the report picked layer %d under %s; the static table distils layer %d without it (the table "
        "is reduced by its own PCA, --static-dims)",
        plan.layer,
        plan.transform.label,
        plan.layer,
    )
    return replace(plan, transform=IDENTITY)


def check_request(config, plan, load_options, model: str) -> StaticRequest | None:
    """`--format static` checked before the model loads (None for another format); `plan` is the export's plan."""
    if config.format != FORMAT:
        if config.static_dims is not None:
            raise StaticExportError("--static-dims applies to the static table: add --format static")
        return None
    require()
    from layerpick.core.models import peek_hidden_size

    _check_dims(config.static_dims, peek_hidden_size(model, load_options))
    if not plan.prompt.is_plain:
        raise StaticExportError(
            f"--format static cannot carry the prompt template {plan.prompt.label}: model2vec "
            "distils single tokens and a text is the mean of its tokens' rows; select and export "
            "with --prompt none"
        )
    if not plan.transform.is_identity:
        raise StaticExportError(
            f"--format static cannot carry the transform {plan.transform.label}: the table is "
            "reduced by its own PCA (--static-dims); export without --transform"
        )
    if config.max_seq_length is not None:
        raise StaticExportError(
            "--max-seq-length does not apply to --format static: a static model averages every "
            "token of a text, in model2vec and sentence-transformers alike"
        )
    if load_options.device_map is not None:
        raise StaticExportError("--format static distils on one device: drop --device-map")
    return StaticRequest(config.static_dims)


def check_pooling(pooling: str) -> str:
    """model2vec's name for the export's pooling (each of layerpick's has one); a one-line error where a pooling
    has none."""
    if pooling not in POOLINGS:
        raise StaticExportError(
            f"--format static pools each token's output with mean, cls or lasttoken "
            f"(model2vec's mean, first, last), not {pooling}"
        )
    return POOLINGS[pooling]


def _check_dims(dims: int | None, hidden_size: int | None) -> None:
    if dims is None:
        return
    if dims < 1:
        raise StaticExportError(f"--static-dims must be at least 1 (got {dims})")
    if hidden_size is not None and dims > hidden_size:
        raise StaticExportError(
            f"--static-dims {dims} is above the model's hidden size ({hidden_size}): PCA keeps "
            f"at most that many dimensions; choose 1..{hidden_size}"
        )


def table_bytes(tokenizer, plan: StaticPlan | None) -> int:
    """A static table's size on disk: a float32 row per token (and its tokenizer, at most as large again)."""
    return 0 if plan is None else 2 * len(tokenizer) * plan.dims * 4


def check_model(loaded, request: StaticRequest, pooling: str) -> StaticPlan:
    """The distillation for the loaded model, before anything is computed: its tokenizer must be one model2vec
    reads, the PCA dimension within its hidden size."""
    hidden = int(loaded.model.config.hidden_size)
    _check_dims(request.dims, hidden)
    _check_tokenizer(loaded.tokenizer, loaded.name)
    return StaticPlan(request.dims or min(DEFAULT_DIMS, hidden), check_pooling(pooling), hidden)


def _check_tokenizer(tokenizer, name: str) -> None:
    """model2vec reads the Rust tokenizer (through skeletoken); a Python-only one, or one it cannot parse, is
    refused in one line."""
    if getattr(tokenizer, "backend_tokenizer", None) is None:
        raise StaticExportError(
            f"model2vec cannot distil {name}: its tokenizer ({type(tokenizer).__name__}) has no "
            "fast (Rust) tokenizer, which model2vec reads"
        )
    from skeletoken import TokenizerModel

    try:
        with quiet(progress=False):
            TokenizerModel.from_transformers_tokenizer(tokenizer).to_tokenizer()
    except Exception as error:  # noqa: BLE001 - skeletoken raises pydantic, value and key errors alike
        raise StaticExportError(f"model2vec cannot distil {name}'s tokenizer: {first_line(error)}") from error


@contextmanager
def quiet(progress: bool) -> Iterator[None]:
    """model2vec's and skeletoken's warnings silenced (they describe their own tokenizer rewriting), and
    model2vec's progress bar off unless progress is wanted."""
    from model2vec.distill import inference

    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [each.level for each in loggers]
    bar = inference.tqdm
    for each in loggers:
        each.setLevel(logging.ERROR)
    if not progress:
        inference.tqdm = partial(bar, disable=True)
    try:
        yield
    finally:
        inference.tqdm = bar
        for each, level in zip(loggers, levels):
            each.setLevel(level)


def first_line(error: BaseException) -> str:
    """The first line of an error's message (its type where it has none), at most 300 characters."""
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:300]
