"""The per-layer encoder mteb evaluates, backed by one forward pass per distinct text for every layer.

`LayerSource` answers "layer k of these texts" from the RepresentationStore; texts it has not stored yet are
encoded first, every layer at once (`layerpick.core.collect.collect`, or an exported sentence-transformers model's
own output as its single layer), in length-sorted chunks, each chunk saved as one shard. `LayerEncoder` is
the view mteb sees: mteb's encoder protocol (an `AbsEncoder`) whose ModelMeta name is distinct per layer,
`layerpick/<model>__layer-<k>`, so its results never mix with the full model's. With a post-pooling transform
(`core.transform`) the view applies the layer's fitted map before normalising.
"""

from __future__ import annotations

import hashlib
import logging
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import torch
from mteb.models.abs_encoder import AbsEncoder
from mteb.models.model_meta import ModelMeta, ScoringFunction
from mteb.types import PromptType

from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import LoadedModel
from layerpick.core.transform import AffineMap
from layerpick.validation.errors import TaskFormatError
from layerpick.validation.store import RepresentationStore, StoreKey

logger = logging.getLogger(__name__)

ProgressFactory = Callable[[str, int], AbstractContextManager]


class Representer(Protocol):
    """Turns texts into pooled states (L+1, n, D); `key` says what the states depend on."""

    key: StoreKey

    def represent(self, texts: Sequence[str]) -> torch.Tensor: ...


@dataclass
class CollectRepresenter:
    """Every layer of a loaded model, from layerpick's one-pass collection."""

    loaded: LoadedModel
    config: CollectConfig
    key: StoreKey

    def represent(self, texts: Sequence[str]) -> torch.Tensor:
        """As the source's own pipeline tokenizes them (default prompt, lower-casing): what an export encodes."""
        return collect(self.loaded, self.loaded.pipeline.prepare(texts), self.config).pooled


@dataclass
class SentenceTransformerRepresenter:
    """An exported sentence-transformers model: its own output is its one and only layer."""

    model: Any
    batch_size: int
    key: StoreKey

    def represent(self, texts: Sequence[str]) -> torch.Tensor:
        vectors = self.model.encode(
            list(texts), batch_size=self.batch_size, convert_to_tensor=True, show_progress_bar=False
        )
        return vectors.detach().float().cpu().unsqueeze(0)


class LayerSource:
    """Stored states of every layer; collects what is missing (all layers in one pass) on demand."""

    def __init__(
        self,
        representer: Representer,
        store: RepresentationStore,
        *,
        chunk_size: int = 128,
        progress: ProgressFactory | None = None,
    ) -> None:
        self.representer = representer
        self.store = store
        self.chunk_size = chunk_size
        self.progress = progress
        self.encoded = 0
        self.collect_seconds = 0.0

    def embeddings(self, texts: Sequence[str], layer: int) -> np.ndarray:
        self.ensure(texts)
        return self.store.layer(texts, layer)

    def ensure(self, texts: Sequence[str]) -> None:
        """Encode (every layer) and store the texts not stored yet; longest first, in chunks."""
        missing = sorted(self.store.missing(texts), key=len, reverse=True)
        if not missing:
            return
        logger.info("encoding %d new texts (every layer, one pass)", len(missing))
        with self._bar(f"encoding {len(missing)} new texts", len(missing)) as advance:
            for start in range(0, len(missing), self.chunk_size):
                chunk = missing[start : start + self.chunk_size]
                began = time.perf_counter()
                states = self.representer.represent(chunk)
                self.store.add(chunk, states)
                self.collect_seconds += time.perf_counter() - began
                self.encoded += len(chunk)
                advance(len(chunk))

    def _bar(self, description: str, total: int) -> AbstractContextManager:
        if self.progress is None:
            from layerpick._util.progress import progress_bar

            return progress_bar(description, total, enabled=False)
        return self.progress(description, total)


class LayerEncoder(AbsEncoder):
    """mteb's view of one layer: encode() returns that layer's pooled vectors (optionally unit length)."""

    def __init__(
        self,
        source: LayerSource,
        layer: int,
        meta: ModelMeta,
        normalize: bool = False,
        transform: AffineMap | None = None,
    ) -> None:
        self.source = source
        self.layer = layer
        self.mteb_model_meta = meta
        self.normalize = normalize
        self.transform = transform
        self.model = None

    def encode(
        self, inputs, *, task_metadata, hf_split: str, hf_subset: str, prompt_type=None, **kwargs: Any
    ) -> np.ndarray:
        texts = []
        for batch in inputs:
            if "text" not in batch:
                raise TaskFormatError(f"{task_metadata.name}: layerpick validates text tasks only")
            texts.extend(batch["text"])
        vectors = self.source.embeddings(texts, self.layer)
        if self.transform is not None:  # pooling -> transform -> normalize, as the export's modules run
            vectors = self.transform.apply(vectors).astype(np.float32)
        if self.normalize:
            vectors = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors


class DocumentRouter(AbsEncoder):
    """mteb's view of an asymmetric pair (`validate --documents-by`): what a retrieval task encodes as documents goes
    to `documents`, everything else (its queries, and every text of the other kinds of task) to `queries`."""

    def __init__(self, queries: AbsEncoder, documents: AbsEncoder, meta: ModelMeta) -> None:
        self.queries = queries
        self.documents = documents
        self.mteb_model_meta = meta
        self.model = None

    def encode(
        self, inputs, *, task_metadata, hf_split: str, hf_subset: str, prompt_type=None, **kwargs: Any
    ) -> np.ndarray:
        encoder = self.documents if prompt_type == PromptType.document else self.queries
        return encoder.encode(
            inputs,
            task_metadata=task_metadata,
            hf_split=hf_split,
            hf_subset=hf_subset,
            prompt_type=prompt_type,
            **kwargs,
        )


def model_label(name: str) -> str:
    """A path-safe label for a model: an alias stays, a path becomes its folder name, a hub id org__name."""
    path = Path(name.rstrip("/"))
    label = path.name if (path.exists() or name.startswith((".", "/", "~"))) else name
    return label.replace("/", "__").replace(" ", "_") or "model"


def layer_model_meta(
    label: str,
    layer: int | str,
    revision: str,
    *,
    embed_dim: int | None,
    max_tokens: int | None,
    experiment: dict[str, Any],
) -> ModelMeta:
    """ModelMeta for one layer view: name `layerpick/<label>__layer-<k>`, cosine similarity."""
    suffix = layer if isinstance(layer, str) else f"layer-{layer}"
    return ModelMeta.create_empty(
        overwrites={
            "name": f"layerpick/{label}__{suffix}",
            "revision": revision,
            "similarity_fn_name": ScoringFunction.COSINE,
            "embed_dim": embed_dim,
            "max_tokens": max_tokens,
            "framework": ["PyTorch"],
            "modalities": ["text"],
            "use_instructions": False,
            "experiment_kwargs": experiment,
        }
    )


def weights_fingerprint(model: torch.nn.Module) -> str:
    """A cheap identity of the weights: the config plus sums over the first, middle and last tensors."""
    digest = hashlib.sha256()
    config = getattr(model, "config", None)
    digest.update((config.to_json_string(use_diff=False) if config is not None else type(model).__name__).encode())
    params = list(model.state_dict().items())
    for name, tensor in (params[0], params[len(params) // 2], params[-1]) if params else ():
        values = tensor.detach().double()
        digest.update(f"{name}{tuple(values.shape)}{values.sum().item():.9e}{values.abs().sum().item():.9e}".encode())
    return digest.hexdigest()[:16]


def normalizes(path: str) -> bool:
    """Whether a sentence-transformers folder's pipeline ends in a Normalize module (unit-length vectors)."""
    from layerpick.core.st_source import local_fetcher, read_pipeline

    return bool(path) and read_pipeline(local_fetcher(path)).normalize
