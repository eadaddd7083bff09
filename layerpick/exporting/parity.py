"""The parity check, the invariant of the whole tool: the saved directory, loaded by sentence-transformers,
encodes texts exactly as `layerpick.core.collect` pools layer K of the full model.

Owns: the parity texts (the built-in ones, and the check of a caller's), the reference (layer K of the uncut model
as `collect` pools it, before any transform and normalisation), how texts are collected for it (small batches of
unequal texts, so padding is exercised in both encoders), and the comparison with its tolerance per dtype. An
export that fails it raises `ParityError` before anything is moved into place, so it leaves nothing behind.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

import torch

from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import LoadedModel
from layerpick.core.prompts import Prompt
from layerpick.exporting.errors import ExportError, ParityError

logger = logging.getLogger(__name__)

PARITY_BATCH_SIZE = 3  # small batches of unequal texts: padding is exercised in both encoders
PARITY_TOLERANCE = {"float32": 1e-5, "float16": 5e-3, "bfloat16": 3e-2}  # relative to the largest |value|
DEFAULT_PARITY_TEXTS = (
    "A cat.",
    "The quick brown fox jumps over the lazy dog.",
    "How many layers does a language model need to produce a good sentence embedding?",
    "Prices rose 3.2% in March, the statistics office said on Tuesday.",
    "Hello!",
    "Layer selection scores every intermediate representation without labels, picks one, and cuts the model "
    "after it, so the exported embedder is smaller and faster while producing exactly that representation.",
    "Où est la gare ? Ich weiß es nicht.",
    "def add(a, b):\n    return a + b",
)


def check_texts(texts: Sequence[str] | None) -> tuple[str, ...]:
    """The parity texts: the caller's (a non-empty list of non-empty strings), else the built-in ones."""
    texts = DEFAULT_PARITY_TEXTS if texts is None else tuple(texts)
    if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        raise ExportError("parity texts must be a non-empty list of non-empty strings")
    return texts


def parity_config(representation: str, prompt: Prompt, pooling: str, max_length: int, progress: bool) -> CollectConfig:
    """How the parity texts are collected: as the export pools them, in small batches."""
    return CollectConfig(pooling, representation, PARITY_BATCH_SIZE, max_length, progress, prompt)


def reference_embeddings(loaded: LoadedModel, texts: Sequence[str], layer: int, config: CollectConfig) -> torch.Tensor:
    """Layer `layer` of the full (uncut) model, as `collect` pools it, before any transform and normalisation: what
    the export must reproduce (once transformed as fitted)."""
    states = collect(loaded, loaded.pipeline.prepare(texts), config)
    return states.layer(layer).float()


def check_parity(
    directory: Path,
    texts: Sequence[str],
    reference: torch.Tensor,
    dtype: str = "float32",
    *,
    device: str = "cpu",
    scale: float = 0.0,
) -> tuple[float, float]:
    """Load `directory` with sentence-transformers and compare its embeddings with `reference`;
    return (max abs diff, tolerance) or raise ParityError. The tolerance is relative to the largest of 1, the
    largest |value| of `reference` and `scale` (the magnitude a Dense module's sums reach: `working_scale`)."""
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(str(directory), device=device)
    encoded = encoder.encode(list(texts), convert_to_tensor=True, batch_size=PARITY_BATCH_SIZE, show_progress_bar=False)
    reference = reference.float().cpu()
    if encoded.shape != reference.shape:
        raise ParityError(
            f"parity failed: the export gives shape {tuple(encoded.shape)}, "
            f"layer K of the full model {tuple(reference.shape)}"
        )
    diff = (encoded.float().cpu() - reference).abs().max().item()
    tolerance = PARITY_TOLERANCE.get(dtype, 1e-5) * max(1.0, reference.abs().max().item(), scale)
    logger.info("parity: max abs diff %.3g (tolerance %.3g) over %d texts", diff, tolerance, len(texts))
    if not diff <= tolerance:
        raise ParityError(
            f"parity failed: the export differs from layer K of the full model by up to {diff:.3g} "
            f"(tolerance {tolerance:.3g}); nothing was written"
        )
    return diff, tolerance
