"""What a heal trains the cut to reproduce, and its vectors, computed once per run and kept with it.

A trained sentence embedder (a model that ships its own sentence-transformers pipeline) is its own teacher: the
full model as it ships (pooling, Dense, Normalize). A raw model's teacher is the cut's own representation at the
full depth: the model exported at layer L exactly as the cut is exported at layer K (the same pooling and
normalisation), so student and teacher differ only in the blocks kept.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch
from safetensors.torch import save_file

from layerpick._util.atomic import atomic_file
from layerpick.core.models import LoadOptions, peek_is_embedder
from layerpick.exporting import ExportConfig, export_model
from layerpick.exporting.metadata import ExportMetadata
from layerpick.healing.workspace import VECTORS_FILE

logger = logging.getLogger(__name__)

FULL_DEPTH_DIR = "teacher"
ENCODE_BATCH = 32


@dataclass(frozen=True)
class Teacher:
    """Where the teacher loads from (a sentence-transformers folder or hub id) and what it is."""

    path: str
    kind: str  # "sentence-transformers" (the model's own pipeline) or "full-depth" (the export at layer L)
    description: str

    def describe(self, dimension: int) -> dict:
        return {"kind": self.kind, "description": self.description, "path": self.path, "dimension": dimension}


def find_teacher(
    model: str, cut: ExportMetadata, work: Path, load_options: LoadOptions, progress: bool = True
) -> Teacher:
    """The teacher of a cut of `model` (whose export's metadata is `cut`); a raw model's is exported into `work`."""
    if peek_is_embedder(model, load_options):
        return Teacher(
            str(cut.source_path or model),
            "sentence-transformers",
            f"{model}'s own sentence-transformers pipeline (all {cut.num_layers} layers)",
        )
    folder = work / FULL_DEPTH_DIR
    if not (folder / "layerpick.json").is_file():  # an export appears whole or not at all
        config = ExportConfig(layer=cut.num_layers, pooling=cut.pooling, progress=progress, overwrite=True)
        export_model(model, cut.num_layers, folder, config, load_options=load_options)
    return Teacher(
        str(folder), "full-depth", f"layer {cut.num_layers} of {model} ({cut.pooling} pooling, as the cut is exported)"
    )


def texts_digest(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\n")
    return digest.hexdigest()


def teacher_vectors(
    teacher: Teacher,
    texts: Sequence[str],
    work: Path,
    device: str,
    progress: bool,
    check_width: Callable[[int], None] = lambda width: None,
) -> torch.Tensor:
    """The teacher's (N, D) float32 vectors of `texts`: read from `work` when a run (an interrupted heal, or another
    cut of the same sweep) already computed them for the same teacher and texts, else computed now and kept there.
    `check_width` sees D first, from one text, so a teacher that cannot be used is refused before the long pass."""
    path, digest = work / VECTORS_FILE, texts_digest(texts)
    kept = _read_vectors(path, {"sha256": digest, "teacher": teacher.path})
    if kept is not None:
        logger.info("teacher vectors read from %s", path)
        check_width(int(kept.shape[1]))
        return kept
    encoder = load_encoder(teacher.path, device)
    check_width(int(encode(encoder, texts[:1]).shape[1]))
    vectors = encode(encoder, texts, progress)
    with atomic_file(path) as partial:  # an interrupted save leaves no file that looks whole
        save_file({"vectors": vectors.contiguous()}, str(partial), metadata={"sha256": digest, "teacher": teacher.path})
    return vectors


def _read_vectors(path: Path, expected: dict[str, str]) -> torch.Tensor | None:
    """The vectors kept at `path` if its metadata has `expected`'s values, else None."""
    if not path.is_file():
        return None
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
            if any(metadata.get(name) != value for name, value in expected.items()):
                return None
            return handle.get_tensor("vectors")
    except Exception:  # noqa: BLE001 - an unreadable file is computed again
        logger.warning("ignoring the unreadable teacher vectors in %s", path)
        return None


def load_encoder(path: str, device: str):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device=device)


def encode(encoder, texts: Sequence[str], progress: bool = False) -> torch.Tensor:
    """(N, D) float32 vectors on the CPU, in the encoder's own pipeline."""
    with torch.no_grad():
        vectors = encoder.encode(
            list(texts), batch_size=ENCODE_BATCH, convert_to_tensor=True, show_progress_bar=progress
        )
    return vectors.float().cpu()
