"""The static part of `layerpick export --format static`: the cut model distilled by model2vec into a table.

Owns: the distillation, the directory it writes, its measure against the cut model, and the `static` section of
`layerpick.json`. What is checked before (the request, the loaded model) and the `StaticPlan` it gives are
`static_checks`.

The distillation is model2vec's (`distill_from_model`): every token of the model's own vocabulary is passed
once, with the model's own special tokens around it, through the model cut after layer K (the cut the torch
parity check has just proven equal to layer K of the full model), its outputs are pooled as the export pools
(mean, first token for `cls`, last token for `lasttoken`), then reduced by PCA and weighted by SIF. A text's
embedding is the mean of its tokens' rows; no transformer runs. model2vec is asked for the raw rows, and its
own `apply_pca` and `compute_weights` finish them as `distill_from_model` would (a test proves the table
equal), so the rows before PCA are at hand: the affine map of that PCA is what the parity notion needs.

The directory is model2vec's own layout (`model.safetensors` with `embeddings`, `tokenizer.json`, `config.json`)
with the `modules.json` model2vec writes beside it (StaticEmbedding, then Normalize when the export
normalises), which sentence-transformers' StaticEmbedding reads: one set of files, both readers, checked to
give the same vectors. Neither truncates (model2vec's `max_length` is None), so they agree on any length.

Parity: a static model is not the cut model. It is measured, never refused: per parity text, the cosine
between the static embedding and the cut model's embedding seen in the static model's coordinates (centred
and projected by the distillation's own PCA).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from layerpick.exporting.static_checks import StaticExportError, StaticPlan, first_line, quiet

logger = logging.getLogger(__name__)

SIF_COEFFICIENT = 1e-4  # model2vec's default
READERS_TOLERANCE = 1e-5  # model2vec and sentence-transformers on the same files, relative to the largest value
MAP_TOLERANCE = 1e-4  # the PCA is an affine map of the rows: its least-squares fit must reproduce it
MAP_SAMPLE = 4096  # rows the affine map is fitted on (at least 4x the hidden size + 1)
TABLE_FILE = "model.safetensors"


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
        with quiet(progress):
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
        raise StaticExportError(f"model2vec cannot distil {type(model).__name__}: {first_line(error)}") from error


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
