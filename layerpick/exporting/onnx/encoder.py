"""An export's ONNX graph run by onnxruntime, behind the `encode` interface `serve` and `bench` use.

Owns: `OnnxEncoder`, which reads an export directory the way sentence-transformers does (the tokenizer, the
length in `sentence_bert_config.json`, the pooling in `1_Pooling/config.json`, a Normalize module in
`modules.json`, a Dense module's weights after the pooling), runs `onnx/model.onnx` (or the int8 graph) on CPU with
onnxruntime, and pools with
`layerpick.core.pooling`. It exists because sentence-transformers' own `backend="onnx"` goes through optimum's
ONNX Runtime package, which pins transformers < 4.58 and so cannot be installed beside this project's
transformers 5 (`benchmarks/engines/` proves that load in an environment of its own).

onnxruntime's intra-op thread count is torch's at load time unless given, so `--threads` means the same for
both backends. Its worker threads do not spin-wait after a run (onnxruntime's default is to spin): spinning
threads hold the cores after each call, which slows whatever runs next in the same process (the full torch
model in a side-by-side `bench`, which then overstated the ONNX speed-up) and burns CPU an idle server does
not need.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from layerpick.core.pooling import POOLING_MODES, pool
from layerpick.errors import LayerpickError, ModelNotFoundError
from layerpick.exporting.onnx.graph import (
    FLOAT_FILE,
    INT8_FILE,
    OUTPUT_NAME,
    graph_bytes,
    require,
)

# the 1_Pooling/config.json flag of each pooling this encoder implements
POOLING_FLAGS = {
    "mean": "pooling_mode_mean_tokens",
    "lasttoken": "pooling_mode_lasttoken",
    "cls": "pooling_mode_cls_token",
}


class OnnxEncoder:
    """A sentence-transformers directory's ONNX graph, with the parts of SentenceTransformer's interface that
    layerpick uses: `encode`, `preprocess`, `max_seq_length`, `device`, the embedding dimension."""

    device = "cpu"

    def __init__(
        self, directory: str | Path, file: str = FLOAT_FILE, threads: int | None = None, apply_dense: bool = True
    ):
        require(("onnxruntime",), purpose="an ONNX backend")
        self.path = Path(directory).expanduser()
        self.file = file
        graph = self.path / file
        if not graph.is_file():
            raise ModelNotFoundError(
                f"no ONNX graph {file} in {self.path} (export it with --format onnx"
                f"{' --quantize int8' if file == INT8_FILE else ''})"
            )
        self.tokenizer = _tokenizer(self.path)
        self.max_seq_length = _max_seq_length(self.path, self.tokenizer)
        self.pooling = _pooling(self.path)
        self.normalizes = _normalizes(self.path)
        self.dense = read_dense(self.path) if apply_dense else None  # False: the graph carries the map
        self.session = _session(graph, threads if threads is not None else torch.get_num_threads())
        self.input_names = [node.name for node in self.session.get_inputs()]
        graph_width = int(self.session.get_outputs()[0].shape[-1])
        self._dimension = graph_width if self.dense is None else int(self.dense[0].shape[0])

    # ---- facts

    def get_embedding_dimension(self) -> int:
        return self._dimension

    get_sentence_embedding_dimension = get_embedding_dimension

    @property
    def num_layers(self) -> int | None:
        config = _read_json(self.path / "config.json") or {}
        value = config.get("num_hidden_layers", config.get("n_layer"))
        return int(value) if isinstance(value, int) else None

    @property
    def graph_bytes(self) -> int:
        return graph_bytes(self.path, self.file)

    def parameter_count(self) -> int:
        """The cut model's parameters (from its safetensors; the graph holds the same weights)."""
        from safetensors import safe_open

        total = 0
        for weights in sorted(self.path.glob("*.safetensors")):
            with safe_open(str(weights), "pt") as handle:
                total += sum(int(np.prod(handle.get_slice(key).get_shape())) for key in handle.keys())
        return total

    # ---- running

    def preprocess(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """The tokenizer's batch for `texts`, as sentence-transformers makes it (right padding, truncation)."""
        return self.tokenizer(
            list(texts), padding=True, truncation="longest_first", max_length=self.max_seq_length, return_tensors="pt"
        )

    def feed(self, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """(the graph's inputs, attention mask (B, T)) for one batch of texts."""
        features = self.preprocess(texts)
        ids = features["input_ids"]
        feed = {
            name: (features[name] if name in features else torch.zeros_like(ids)).numpy().astype(np.int64)
            for name in self.input_names
        }
        return feed, features["attention_mask"].numpy()

    def token_states(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(states (B, T, D), attention mask (B, T)) for one batch of texts."""
        feed, mask = self.feed(texts)
        return self.session.run([OUTPUT_NAME], feed)[0], mask

    def token_embeddings(self, texts: Sequence[str], batch_size: int = 32) -> list[np.ndarray]:
        """Each text's token states without padding, like encode(output_value='token_embeddings')."""
        result = []
        for start in range(0, len(texts), batch_size):
            states, mask = self.token_states(texts[start : start + batch_size])
            result += [states[i, mask[i].astype(bool)] for i in range(len(states))]
        return result

    def encode(
        self,
        sentences: str | Sequence[str],
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        normalize_embeddings: bool = False,
        **_: Any,
    ):
        """Sentence embeddings (N, D), longest texts batched together as sentence-transformers does."""
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        order = np.argsort([-len(text) for text in texts], kind="stable")
        pooled = [
            self._embed([texts[i] for i in order[start : start + batch_size]])
            for start in range(0, len(texts), batch_size)
        ]
        vectors = np.concatenate(pooled) if pooled else np.zeros((0, self._dimension), np.float32)
        vectors = vectors[np.argsort(order, kind="stable")]
        if normalize_embeddings and not self.normalizes:
            vectors = _l2(vectors)
        if convert_to_tensor:
            return torch.from_numpy(vectors[0] if single else vectors)
        return vectors[0] if single else vectors

    def _embed(self, texts: list[str]) -> np.ndarray:
        states, mask = self.token_states(texts)
        vectors = pool(torch.from_numpy(states), torch.from_numpy(mask), self.pooling).numpy()
        if self.dense is not None:  # the Dense module after pooling, as sentence-transformers runs it
            weight, bias = self.dense
            vectors = (vectors @ weight.T + bias).astype(np.float32)
        return _l2(vectors) if self.normalizes else vectors


def _l2(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def _session(graph: Path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, int(threads))
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001 - onnxruntime raises its own types; one line for the user
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ModelNotFoundError(f"cannot load ONNX graph {graph}: {first}") from error


def _tokenizer(directory: Path):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(directory))
    except (OSError, ValueError) as error:
        raise ModelNotFoundError(f"cannot load the tokenizer of {directory}: {error}") from error


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def _max_seq_length(directory: Path, tokenizer) -> int:
    saved = (_read_json(directory / "sentence_bert_config.json") or {}).get("max_seq_length")
    return int(saved) if isinstance(saved, int) and saved > 0 else int(tokenizer.model_max_length)


def _modules(directory: Path) -> list[dict]:
    modules = _read_json(directory / "modules.json")
    if not isinstance(modules, list):
        raise ModelNotFoundError(f"not a sentence-transformers directory (no readable modules.json): {directory}")
    return modules


def _pooling(directory: Path) -> str:
    entry = next((m for m in _modules(directory) if str(m.get("type", "")).endswith("Pooling")), None)
    config = _read_json(directory / (entry or {}).get("path", "1_Pooling") / "config.json") or {}
    if isinstance(config.get("pooling_mode"), str):  # sentence-transformers >= 5.7 names the mode in one key
        mode = config["pooling_mode"]
        if mode not in POOLING_FLAGS:
            raise LayerpickError(
                f"{directory}: the ONNX backend pools with one of {', '.join(POOLING_MODES)}; "
                f"1_Pooling/config.json names {mode!r}"
            )
        return mode
    on = [mode for mode, flag in POOLING_FLAGS.items() if config.get(flag)]
    others = [
        key
        for key, value in config.items()
        if key.startswith("pooling_mode_") and value and key not in POOLING_FLAGS.values()
    ]
    if len(on) != 1 or others:
        raise LayerpickError(
            f"{directory}: the ONNX backend pools with one of {', '.join(POOLING_MODES)}; "
            f"1_Pooling/config.json turns on {on + others or 'none'}"
        )
    return on[0]


def read_dense(directory: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """The (weight (out, in), bias (out,)) of the directory's Dense module, None without one; only the identity
    activation layerpick writes is accepted."""
    entries = [m for m in _modules(directory) if str(m.get("type", "")).endswith("Dense")]
    if not entries:
        return None
    if len(entries) > 1:
        raise LayerpickError(f"{directory}: the ONNX backend applies one Dense module, modules.json has {len(entries)}")
    folder = directory / entries[0].get("path", "2_Dense")
    config = _read_json(folder / "config.json") or {}
    activation = config.get("activation_function", "")
    if not str(activation).endswith("Identity"):
        raise LayerpickError(
            f"{folder}: the ONNX backend applies a Dense module with the identity activation "
            f"only (found {activation or 'none'})"
        )
    from safetensors.numpy import load_file

    weights = load_file(str(folder / "model.safetensors"))
    weight = weights["linear.weight"].astype(np.float32)
    bias = weights.get("linear.bias", np.zeros(weight.shape[0], np.float32)).astype(np.float32)
    return weight, bias


def _normalizes(directory: Path) -> bool:
    return any(str(m.get("type", "")).endswith("Normalize") for m in _modules(directory))
