"""SciFact nDCG@10 of each row of `benchmarks/peers.py`, through mteb with the row as the encoder.

- alone: queries and documents by the row;
- query encoder: queries by the row, documents by the full model in sentence-transformers (torch), as
  `layerpick validate --documents-by` pairs them (layerpick's `DocumentRouter` routes the texts).

The task is mteb's SciFact with the shared folder's data injected (`layerpick.validation.tasks.resolve_tasks`).
Each row's vectors are kept in WORK/vectors/<row>.npz (text -> vector), so the full model encodes the corpus once
and a rerun resumes. Texts are encoded sorted by length (less padding), in batches of 32.

Which rows are scored alone (each encodes the 5,183 abstracts; the full torch model takes about 15 minutes on
2 cores): the full model, its int8 graph, model2vec, the healed cut in torch and in int8. A float32 ONNX graph
(sentence-transformers', fastembed's, layerpick's) gives its torch model's vectors (parity on the timing texts,
in the timing file), so its score is taken as its torch row's and marked so.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SCIFACT = DATA / "SciFact"
# the order in which rows are scored alone (the aim's row and the cheapest first, then the full model, then the
# rest); the float graphs of a torch row take its score
FIRST = ("cut int8", "static")
LATER = ("cut torch", "full int8")


class VectorCache:
    """A row's vectors by text, on disk, filled on demand by its encoder."""

    def __init__(self, path: Path, encoder, log, seed: dict[bytes, np.ndarray] | None = None):
        self.path, self.encoder, self.log, self.seed = path, encoder, log, seed or {}
        self.vectors: dict[str, np.ndarray] = {}  # by the text's sha1 (hex)
        if path.is_file():
            data = np.load(path, allow_pickle=False)
            self.vectors = dict(zip(data["keys"].tolist(), data["vectors"]))

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def save(self) -> None:
        keys = list(self.vectors)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        tmp.replace(self.path)

    def get(self, texts: list[str]) -> np.ndarray:
        for text in texts:  # vectors the same encoder already made (layerpick's store), by sha256 of the text
            if self.seed and self.key(text) not in self.vectors:
                found = self.seed.get(hashlib.sha256(text.encode("utf-8")).digest())
                if found is not None:
                    self.vectors[self.key(text)] = found
        missing = sorted({t for t in texts if self.key(t) not in self.vectors}, key=len)
        if missing:
            self.log(f"{self.path.stem}: encoding {len(missing)} texts")
        for start in range(0, len(missing), 32):
            chunk = missing[start : start + 32]
            vectors = np.asarray(self.encoder.encode(chunk, batch_size=32), dtype=np.float32)
            self.vectors.update(zip(map(self.key, chunk), vectors))
            if (start // 32) % 40 == 39:
                self.save()
        if missing:
            self.save()
        out = np.stack([self.vectors[self.key(t)] for t in texts])
        return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)


def store_vectors(model_path: Path, max_length: int, log) -> dict[bytes, np.ndarray]:
    """The full model's vectors that `layerpick validate --documents-by MODEL` left in layerpick's representation
    store (`layerpick.validation.store`: one folder per key, shards of sha256 digests and states (1, n, D)): the
    same SentenceTransformer encode as this script's full-model row, so its SciFact documents need not be encoded
    again. Only a store whose key names this folder, the sentence-transformers pipeline, its max length and no
    prompt is read."""
    import os

    from safetensors.numpy import load_file

    root = Path(os.environ.get("LAYERPICK_STORE", Path.home() / ".cache" / "layerpick" / "store"))
    found: dict[bytes, np.ndarray] = {}
    for key_file in sorted(root.glob("*/key.json")):
        key = json.loads(key_file.read_text())
        if (
            Path(key.get("model_path", "")).resolve() != Path(model_path).resolve()
            or key.get("representation") != "sentence-transformers"
            or key.get("max_length") != max_length
            or key.get("prompt") is not None
        ):
            continue
        for shard in sorted(key_file.parent.glob("shard-*.safetensors")):
            data = load_file(str(shard))
            found.update(zip((bytes(d) for d in data["digests"]), data["states"][-1]))
        log(f"read {len(found)} vectors of {model_path} from the store {key_file.parent}")
    return found


def adapter(label: str, cache: VectorCache, dim: int):
    from mteb.models.abs_encoder import AbsEncoder

    from layerpick.validation.encoder import layer_model_meta

    class Adapter(AbsEncoder):
        def __init__(self):
            self.mteb_model_meta = layer_model_meta(label, "peer", "0", embed_dim=dim, max_tokens=None, experiment={})
            self.model = None

        def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs: Any):
            texts = [text for batch in inputs for text in batch["text"]]
            return cache.get(texts)

    return Adapter()


def scifact(encoder) -> float:
    import mteb

    from layerpick.validation.evaluate import main_score
    from layerpick.validation.tasks import resolve_tasks

    spec = resolve_tasks([str(SCIFACT)])[0]
    result = mteb.evaluate(
        encoder, spec.new_task(), cache=None, overwrite_strategy="always", show_progress_bar=False, co2_tracker=False
    )
    if result.exceptions:
        raise RuntimeError(result.exceptions[0].exception)
    return main_score(result.task_results[0])


def quality(work: Path, name: str, rows: list[dict], which: set[str], load_row, log, reuse_store: bool = False) -> dict:
    """{row: {alone, query}} for `name`'s rows; finished scores are kept in WORK/results/quality-NAME.json."""
    from layerpick.validation.encoder import DocumentRouter, layer_model_meta

    out = work / "results" / f"quality-{name}.json"
    scores = json.loads(out.read_text()) if out.is_file() else {}
    (work / "vectors").mkdir(exist_ok=True)
    caches: dict[str, VectorCache] = {}

    def cache(row: dict) -> VectorCache:
        if row["row"] not in caches:
            tag = hashlib.sha1(row["row"].encode()).hexdigest()[:8]
            seed = store_vectors(Path(row["path"]), 256, log) if reuse_store and row is rows[0] else None
            caches[row["row"]] = VectorCache(work / "vectors" / f"{name}-{tag}.npz", _Lazy(load_row, row), log, seed)
        return caches[row["row"]]

    def save() -> None:
        out.write_text(json.dumps(scores, indent=1))

    full, dim = rows[0], None
    label = {row["row"]: f"{name}-{hashlib.sha1(row['row'].encode()).hexdigest()[:8]}" for row in rows}
    entry = {row["row"]: scores.setdefault(row["row"], {}) for row in rows}

    def alone(role: str) -> None:
        for row in rows:
            if row.get("role") == role and "alone" not in entry[row["row"]]:
                log(f"{name}: SciFact alone with {row['row']}")
                entry[row["row"]]["alone"] = scifact(adapter(label[row["row"]], cache(row), dim))
                save()

    # the aim's row first and the cheap static table, then the full model (whose documents every query-encoder
    # score uses), the query-encoder scores, and the other rows alone
    if "alone" in which:
        for role in FIRST:
            alone(role)
    alone("full")
    entry[full["row"]]["query"] = entry[full["row"]]["alone"]
    if "query" in which:
        for row in rows[1:]:
            if "query" not in entry[row["row"]]:
                log(f"{name}: SciFact with queries by {row['row']}, documents by the full model")
                queries = adapter(label[row["row"]], cache(row), dim)
                documents = adapter(label[full["row"]], cache(full), dim)
                meta = layer_model_meta(
                    f"{label[row['row']]}-q", "peer", "0", embed_dim=dim, max_tokens=None, experiment={}
                )
                entry[row["row"]]["query"] = scifact(DocumentRouter(queries, documents, meta))
                save()
    if "alone" in which:
        for role in LATER:
            alone(role)
    save()
    return scores


class _Lazy:
    """Loads a row's encoder on its first `encode` (a row whose vectors are all cached is never loaded)."""

    def __init__(self, load_row, row: dict):
        self.load_row, self.row, self.encoder = load_row, row, None

    def encode(self, texts, batch_size: int = 32):
        if self.encoder is None:
            self.encoder = self.load_row(self.row)
        return self.encoder.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
