"""The static part of `layerpick export --format static`: the cut model distilled by model2vec into a table.

Owns: checking the request before any model loads (the optional `static` extra, the PCA dimension, and what a
static model cannot carry: a prompt template, a post-pooling transform, a sequence length, a model spread over
devices), checking the loaded model's tokenizer and hidden size,
the distillation, the directory it writes, and the `static` section of `layerpick.json`.

The distillation is model2vec's (`distill_from_model`): every token of the model's own vocabulary is passed
once, with the model's own special tokens around it, through the model cut after layer K (the cut the torch
parity check has just proven equal to layer K of the full model), its outputs are pooled as the export pools
(mean, first token for `cls`, last token for `lasttoken`), then reduced by PCA and weighted by SIF. A text's
embedding is the mean of its tokens' rows; no transformer runs. model2vec is asked for the raw rows, and its
own `apply_pca` and `compute_weights` finish them as `distill_from_model` would (a test proves the table
equal), so the rows before PCA are at hand: the affine map of that PCA is what the parity notion needs.

A template cannot be distilled: model2vec passes single tokens, and a text's row is a mean of token rows, so
nothing can wrap a text in a template; a request with one is refused. So is a transform (the table has its
own PCA, `--static-dims`), with one exception: from a select report whose pick is under a transform (what
`--transform auto` often picks for a language model), the report's layer is distilled without it, as the
evidence advises (benchmarks/results/static.md: that layer, untransformed, gave the best table measured on each
packaged model), and a warning says so.

The directory is model2vec's own layout (`model.safetensors` with `embeddings`, `tokenizer.json`, `config.json`)
with the `modules.json` model2vec writes beside it (StaticEmbedding, then Normalize when the export
normalises), which sentence-transformers' StaticEmbedding reads: one set of files, both readers, checked to
give the same vectors. Neither truncates (model2vec's `max_length` is None), so they agree on any length.

Parity: a static model is not the cut model. It is measured, never refused: per parity text, the cosine
between the static embedding and the cut model's embedding seen in the static model's coordinates (centred
and projected by the distillation's own PCA).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from layerpick.errors import LayerpickError

logger = logging.getLogger(__name__)

FORMAT = "static"
PACKAGES = ("model2vec", "skeletoken")  # the `static` extra of pyproject.toml
DEFAULT_DIMS = 256  # model2vec's default PCA dimension (the hidden size where that is smaller)
SIF_COEFFICIENT = 1e-4  # model2vec's default
POOLINGS = {"mean": "mean", "cls": "first", "lasttoken": "last"}  # layerpick's pooling -> model2vec's
READERS_TOLERANCE = 1e-5  # model2vec and sentence-transformers on the same files, relative to the largest value
MAP_TOLERANCE = 1e-4  # the PCA is an affine map of the rows: its least-squares fit must reproduce it
MAP_SAMPLE = 4096  # rows the affine map is fitted on (at least 4x the hidden size + 1)
TABLE_FILE = "model.safetensors"
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


@dataclass(frozen=True)
class Distilled:
    """model2vec's static model, the affine map of its PCA ([y, 1] @ pca_map: a cut-model vector y in the table's
    coordinates), and what the distillation took."""

    model: Any
    pca_map: np.ndarray
    seconds: float
    variance_kept: float | None
    pca_applied: bool
    tokenizer_tokens: int


def require() -> None:
    """A one-line error naming the extra when model2vec (or what it distils with) is not installed."""
    missing = [name for name in PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise StaticExportError(
            f"--format static needs the optional extra: pip install 'layerpick[static]' (missing: {', '.join(missing)})"
        )


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
        with _quiet(progress=False):
            TokenizerModel.from_transformers_tokenizer(tokenizer).to_tokenizer()
    except Exception as error:  # noqa: BLE001 - skeletoken raises pydantic, value and key errors alike
        raise StaticExportError(f"model2vec cannot distil {name}'s tokenizer: {_first_line(error)}") from error


def export_static(
    loaded,
    tokenizer,
    plan: StaticPlan,
    target: Path,
    texts: Sequence[str],
    pooled: torch.Tensor,
    normalize: bool,
    device: str,
    progress: bool,
) -> dict[str, Any]:
    """Distil the cut model (in `loaded`, changed in place: model2vec drops the embedding rows of unused added
    tokens), write the static directory at `target`, measure it against the cut model's `pooled` embeddings of
    `texts`, and return the `static` section of layerpick.json."""
    distilled = distil(loaded.model, tokenizer, plan, normalize, device, progress, name=loaded.name, path=loaded.path)
    distilled.model.save_pretrained(str(target))
    parity = measure(target, texts, pooled, distilled)
    logger.info(
        "static: cosine to the cut model mean %.4f, min %.4f over %d texts",
        parity["mean_cosine"],
        parity["min_cosine"],
        len(texts),
    )
    return section(distilled, plan, target, normalize, parity)


def distil(
    model, tokenizer, plan: StaticPlan, normalize: bool, device: str, progress: bool, *, name: str, path: str = ""
) -> Distilled:
    """model2vec's static model of `model` (a cut transformers model) and the affine map of its PCA."""
    from model2vec import StaticModel
    from model2vec.distill.inference import apply_pca, compute_weights

    began = time.perf_counter()
    raw = _raw_rows(model, tokenizer, plan.pooling, device, progress, path)
    rows = raw.embedding
    scores = apply_pca(rows, plan.dims)
    table = (scores * compute_weights(len(rows), sif_coefficient=SIF_COEFFICIENT)[:, None]).astype(np.float32)
    seconds = time.perf_counter() - began
    config = {
        **raw.config,
        "apply_pca": plan.dims,
        "sif_coefficient": SIF_COEFFICIENT,
        "hidden_dim": int(table.shape[1]),
        "normalize": normalize,
        "max_length": None,
    }
    static = StaticModel(
        vectors=table,
        tokenizer=raw.tokenizer,
        config=config,
        normalize=normalize,
        base_model_name=name,
        language=None,
        max_length=None,
    )
    applied = scores is not rows
    return Distilled(
        static,
        pca_map(rows, scores),
        seconds,
        _variance_kept(rows, scores) if applied else None,
        applied,
        len(tokenizer),
    )


def _raw_rows(model, tokenizer, pooling: str, device: str, progress: bool, path: str):
    """model2vec's distillation stopped before PCA and weighting: one float32 row per vocabulary token, the cut
    model's pooled output for it."""
    from model2vec.distill import distill_from_model

    model.name_or_path = path if path and os.path.exists(path) else ""  # local: model2vec asks no hub for a card
    try:
        with _quiet(progress):
            return distill_from_model(
                model,
                tokenizer,
                device=device,
                pca_dims=None,
                sif_coefficient=None,
                quantize_to="float32",
                pooling=pooling,
            )
    except Exception as error:  # noqa: BLE001 - a model model2vec cannot run fails in many ways; one line
        raise StaticExportError(f"model2vec cannot distil {type(model).__name__}: {_first_line(error)}") from error


def pca_map(rows: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The affine map ([x, 1] @ map) that takes a row before PCA to its row after, fitted by least squares on a
    seeded sample of rows; an error when it does not reproduce them (model2vec's PCA would then not be affine)."""
    count = min(len(rows), max(MAP_SAMPLE, 4 * (rows.shape[1] + 1)))
    chosen = np.random.default_rng(0).choice(len(rows), size=count, replace=False)
    inputs = np.hstack([rows[chosen].astype(np.float64), np.ones((count, 1))])
    target = scores[chosen].astype(np.float64)
    mapping = np.linalg.lstsq(inputs, target, rcond=None)[0]
    error = np.abs(inputs @ mapping - target).max() / max(float(np.abs(target).max()), 1e-12)
    if not error <= MAP_TOLERANCE:
        raise StaticExportError(
            f"model2vec's PCA is not an affine map of the rows (error {error:.2g}); the static "
            "model cannot be compared with the cut model"
        )
    return mapping


def _variance_kept(rows: np.ndarray, scores: np.ndarray) -> float:
    """The share of the rows' variance the PCA keeps."""
    return float(scores.astype(np.float64).var(axis=0).sum() / rows.astype(np.float64).var(axis=0).sum())


def measure(target: Path, texts: Sequence[str], pooled: torch.Tensor, distilled: Distilled) -> dict[str, Any]:
    """Both readers on the written directory must agree; then, per text, the cosine between the static
    embedding and the cut model's (`pooled`, before any normalisation) mapped by the PCA."""
    vectors = read_both(target, texts)
    cut = np.hstack([pooled.double().cpu().numpy(), np.ones((len(texts), 1))]) @ distilled.pca_map
    cosines = torch.nn.functional.cosine_similarity(
        torch.from_numpy(vectors["model2vec"]).double(), torch.from_numpy(cut), dim=-1
    ).tolist()
    return {
        "reference": "the cut model's embeddings of the parity texts, centred and projected by the "
        "distillation's own PCA (the static model's coordinates)",
        "texts": len(texts),
        "cosine_to_cut": [round(value, 6) for value in cosines],
        "mean_cosine": float(np.mean(cosines)),
        "min_cosine": float(np.min(cosines)),
        "readers_max_abs_diff": vectors["diff"],
        "refused_below": None,
    }


def read_both(target: Path, texts: Sequence[str]) -> dict[str, Any]:
    """The texts embedded by model2vec and by sentence-transformers from `target`; an error when they differ."""
    from model2vec import StaticModel
    from sentence_transformers import SentenceTransformer

    ours = np.asarray(StaticModel.from_pretrained(str(target)).encode(list(texts)), np.float32)
    theirs = SentenceTransformer(str(target), device="cpu").encode(
        list(texts), convert_to_numpy=True, show_progress_bar=False
    )
    diff = float(np.abs(ours - theirs).max()) if ours.shape == theirs.shape else float("inf")
    if not diff <= READERS_TOLERANCE * max(1.0, float(np.abs(ours).max())):
        raise StaticExportError(
            f"the static directory reads differently in model2vec and sentence-transformers "
            f"(max abs diff {diff:.3g}); nothing was written"
        )
    return {"model2vec": ours, "sentence_transformers": theirs, "diff": diff}


def section(
    distilled: Distilled, plan: StaticPlan, target: Path, normalize: bool, parity: dict[str, Any]
) -> dict[str, Any]:
    """The `static` section of layerpick.json."""
    table = distilled.model.embedding
    return {
        "format": "model2vec static model; modules.json: sentence-transformers StaticEmbedding",
        "readers": ["model2vec.StaticModel.from_pretrained", "sentence_transformers.SentenceTransformer"],
        "distiller": f"model2vec {metadata.version('model2vec')} distill_from_model, then its apply_pca and "
        "compute_weights (SIF)",
        "token_pooling": plan.pooling,
        "pca_dims": plan.dims,
        "pca_applied": distilled.pca_applied,
        "hidden_size": plan.hidden_size,
        "variance_kept": distilled.variance_kept,
        "sif_coefficient": SIF_COEFFICIENT,
        "vocabulary": {
            "rows": int(table.shape[0]),
            "tokenizer_tokens": distilled.tokenizer_tokens,
            "source": "the model's own tokenizer (model2vec drops added tokens other than the special "
            "ones it uses, and [unusedN] tokens)",
        },
        "dtype": str(table.dtype),
        "file": TABLE_FILE,
        "bytes": (Path(target) / TABLE_FILE).stat().st_size,
        "normalize": normalize,
        "max_length": None,
        "distill_seconds": distilled.seconds,
        "parity": parity,
    }


@contextmanager
def _quiet(progress: bool) -> Iterator[None]:
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


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:300]
