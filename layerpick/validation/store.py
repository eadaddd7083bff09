"""The on-disk representation store: every layer's pooled vector of every text a model has encoded.

One directory per StoreKey (model, weights fingerprint, revision, representation, pooling, max_length, dtype,
prompt template);
inside it, `key.json` and shards (`shard-*.safetensors`: `digests` (n, 32) uint8, the sha256 of each text, and
`states` (L+1, n, D) float32). A shard is written to a temporary file and renamed into place, so an
interrupted run leaves whole shards only; the next run reuses them. Shards are never rewritten.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from layerpick._util.atomic import atomic_file, write_text_atomic
from layerpick._util.disk import check_free
from layerpick.validation.errors import StoreError

logger = logging.getLogger(__name__)

STORE_FORMAT = 1
SHARD_HEADER_ALLOWANCE = 1 << 16  # bytes of a shard beyond its tensors (the safetensors header)


@dataclass(frozen=True)
class StoreKey:
    """Everything that changes a stored vector; two runs share vectors only when all of it matches."""

    model: str
    model_path: str
    fingerprint: str
    revision: str | None
    representation: str
    pooling: str
    max_length: int
    dtype: str
    prompt: str | None = None  # the template texts were wrapped in (None: plain text)

    def digest(self) -> str:
        fields = {k: v for k, v in asdict(self).items() if not (k == "prompt" and v is None)}  # plain: as before
        payload = json.dumps({**fields, "format": STORE_FORMAT}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:20]


def text_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class RepresentationStore:
    """Pooled states of texts at every layer, on disk under `root/<key digest>/`, loaded into memory on open."""

    def __init__(self, root: Path, key: StoreKey) -> None:
        self.key = key
        self.directory = Path(root) / key.digest()
        self._shards: list[torch.Tensor] = []
        self._index: dict[bytes, tuple[int, int]] = {}
        self._open()

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, text: str) -> bool:
        return text_digest(text) in self._index

    @property
    def shape(self) -> tuple[int, int] | None:
        """(layers incl. 0, dimension) of the stored states, None while empty."""
        return (self._shards[0].shape[0], self._shards[0].shape[2]) if self._shards else None

    def missing(self, texts: Iterable[str]) -> list[str]:
        """The distinct texts not stored yet, in first-seen order."""
        seen: set[bytes] = set()
        out = []
        for text in texts:
            digest = text_digest(text)
            if digest not in self._index and digest not in seen:
                seen.add(digest)
                out.append(text)
        return out

    def add(self, texts: Sequence[str], states: torch.Tensor) -> None:
        """Store `states` (L+1, len(texts), D) for `texts` as one new shard (atomic rename)."""
        if states.ndim != 3 or states.shape[1] != len(texts):
            raise StoreError(f"states of shape {tuple(states.shape)} do not match {len(texts)} texts")
        if self.shape is not None and (states.shape[0], states.shape[2]) != self.shape:
            raise StoreError(f"states of shape {tuple(states.shape)} do not match the store's {self.shape}")
        digests = torch.tensor(np.frombuffer(b"".join(text_digest(t) for t in texts), dtype=np.uint8).reshape(-1, 32))
        states = states.detach().to(torch.float32).cpu().contiguous()
        self._write_shard({"digests": digests, "states": states})
        self._append(digests, states)

    def layer(self, texts: Sequence[str], layer: int) -> np.ndarray:
        """(len(texts), D) float32 vectors of `layer`, in the order of `texts` (all must be stored)."""
        if self.shape is None:
            raise StoreError("the representation store is empty")
        try:
            places = [self._index[text_digest(t)] for t in texts]
        except KeyError:
            raise StoreError("a requested text is not in the representation store") from None
        shards = np.fromiter((p[0] for p in places), dtype=np.int64, count=len(places))
        rows = np.fromiter((p[1] for p in places), dtype=np.int64, count=len(places))
        out = torch.empty(len(texts), self.shape[1], dtype=torch.float32)
        for shard in np.unique(shards):
            selected = np.nonzero(shards == shard)[0]
            out[torch.from_numpy(selected)] = self._shards[shard][layer, torch.from_numpy(rows[selected])]
        return out.numpy()

    def _open(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            key_file = self.directory / "key.json"
            if not key_file.exists():
                write_text_atomic(key_file, json.dumps({**asdict(self.key), "format": STORE_FORMAT}, indent=2))
        except OSError as error:
            raise StoreError(f"cannot use representation store {self.directory}: {error.strerror or error}") from None
        for path in sorted(self.directory.glob("shard-*.safetensors")):
            self._load_shard(path)
        if self._index:
            logger.info("representation store %s: %d texts", self.directory, len(self._index))

    def _load_shard(self, path: Path) -> None:
        try:
            tensors = load_file(str(path))
            digests, states = tensors["digests"], tensors["states"]
        except Exception as error:  # noqa: BLE001 - a damaged shard is skipped, its texts are encoded again
            logger.warning("skipping unreadable store shard %s (%s)", path, error)
            return
        if self.shape is not None and (states.shape[0], states.shape[2]) != self.shape:
            logger.warning("skipping store shard %s of a different shape", path)
            return
        self._append(digests, states)

    def _append(self, digests: torch.Tensor, states: torch.Tensor) -> None:
        shard = len(self._shards)
        self._shards.append(states)
        for row, digest in enumerate(digests.numpy()):
            self._index.setdefault(digest.tobytes(), (shard, row))

    def _write_shard(self, tensors: dict[str, torch.Tensor]) -> None:
        name = f"shard-{time.time_ns()}-{uuid.uuid4().hex[:8]}.safetensors"
        needed = sum(t.numel() * t.element_size() for t in tensors.values()) + SHARD_HEADER_ALLOWANCE
        check_free(self.directory, needed)
        try:
            with atomic_file(self.directory / name, needed) as temporary:
                save_file(tensors, str(temporary), metadata={"format": str(STORE_FORMAT)})
        except OSError as error:
            raise StoreError(f"cannot write to representation store {self.directory}: {error.strerror}") from None
