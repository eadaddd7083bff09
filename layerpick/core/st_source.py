"""A source model's own sentence-transformers pipeline: what an export carries over and validation honours.

A sentence-transformers model is more than its transformer: `modules.json` may end in a Normalize module
(unit vectors), `sentence_bert_config.json` sets `max_seq_length` and `do_lower_case`,
`config_sentence_transformers.json` holds named prompts and the default one, `1_Pooling/config.json` the
pooling. `read_pipeline` reads them from a local folder or, for a hub id, from the hub or its cache, so a
model named by alias, folder or hub id gets the same pipeline. A plain transformers model gets `Pipeline()`:
no normalisation, no prompt, no lower-casing, no length or pooling of its own.

`Pipeline.prepare` puts the default prompt in front of texts, as the source's `SentenceTransformer.encode`
does, and `lowercase_tokenizer` gives the tokenizer a Lowercase normaliser when the source asks for
lower-casing (what sentence-transformers 6 itself does), so layer k computed by layerpick matches the
exported model's output, which applies the same steps (its saved tokenizer carries the normaliser).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from layerpick.errors import ModelFileError

logger = logging.getLogger(__name__)

UNSET_LENGTH = 10**9  # transformers' "no limit" model_max_length is about 1e30

# legacy boolean keys of 1_Pooling/config.json -> layerpick's pooling names (others have no layerpick pooling)
POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_lasttoken": "lasttoken",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
}


@dataclass(frozen=True)
class Pipeline:
    """The steps around the transformer that a sentence-transformers source applies."""

    sentence_transformers: bool = False
    normalize: bool = False
    max_seq_length: int | None = None
    do_lower_case: bool = False
    prompts: dict[str, str] = field(default_factory=dict)
    default_prompt_name: str | None = None
    pooling: str | None = None

    @property
    def default_prompt(self) -> str:
        return self.prompts.get(self.default_prompt_name or "", "") if self.default_prompt_name else ""

    def prepare(self, texts: Sequence[str]) -> list[str]:
        """The texts as the source's `encode` hands them to its tokenizer: the default prompt first."""
        prompt = self.default_prompt
        return [prompt + text for text in texts] if prompt else list(texts)

    def describe(self) -> dict[str, Any]:
        return {
            "normalize": self.normalize,
            "max_seq_length": self.max_seq_length,
            "do_lower_case": self.do_lower_case,
            "prompts": dict(self.prompts),
            "default_prompt_name": self.default_prompt_name,
            "pooling": self.pooling,
        }


def read_pipeline(fetch: Callable[[str], str | Path | None]) -> Pipeline:
    """The pipeline of the model whose files `fetch(name)` returns (a local path, or None when absent)."""
    modules = _json(fetch("modules.json"))
    if not isinstance(modules, list):
        return Pipeline()
    types = {str(entry.get("type", "")).rsplit(".", 1)[-1]: entry for entry in modules if isinstance(entry, dict)}
    transformer_dir = str(types.get("Transformer", {}).get("path") or "")
    settings = _json(fetch(_join(transformer_dir, "sentence_bert_config.json"))) or {}
    st_config = _json(fetch("config_sentence_transformers.json")) or {}
    pooling_dir = str(types.get("Pooling", {}).get("path") or "1_Pooling")
    pooling = _pooling(_json(fetch(_join(pooling_dir, "config.json"))) if "Pooling" in types else None)
    prompts = st_config.get("prompts") if isinstance(st_config.get("prompts"), dict) else {}
    default = st_config.get("default_prompt_name")
    length = settings.get("max_seq_length")
    if length is None:  # sentence-transformers 6 keeps it as the tokenizer's model_max_length
        length = (_json(fetch(_join(transformer_dir, "tokenizer_config.json"))) or {}).get("model_max_length")
    return Pipeline(
        sentence_transformers=True,
        normalize="Normalize" in types,
        max_seq_length=length if isinstance(length, int) and 0 < length < UNSET_LENGTH else None,
        do_lower_case=bool(settings.get("do_lower_case", False)),
        prompts={str(k): str(v) for k, v in prompts.items()},
        default_prompt_name=default if isinstance(default, str) and default in prompts else None,
        pooling=pooling,
    )


def lowercase_tokenizer(tokenizer) -> None:
    """Put a Lowercase normaliser in front of a fast tokenizer's own, unless it has one (sentence-transformers
    6's reading of `do_lower_case`; the tokenizer saved with an export keeps it)."""
    from tokenizers.normalizers import Lowercase
    from tokenizers.normalizers import Sequence as NormalizerSequence

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return
    current = backend.normalizer
    parts = list(current) if isinstance(current, NormalizerSequence) else [current] if current is not None else []
    if not any(isinstance(part, Lowercase) for part in parts):
        backend.normalizer = NormalizerSequence([Lowercase(), *parts])


def local_fetcher(folder: str | Path) -> Callable[[str], Path | None]:
    folder = Path(folder)

    def fetch(name: str) -> Path | None:
        path = folder / name
        return path if path.is_file() else None

    return fetch


def _pooling(config: Any) -> str | None:
    if not isinstance(config, dict):
        return None
    if isinstance(config.get("pooling_mode"), str):  # sentence-transformers 6's compact form
        return config["pooling_mode"]
    chosen = [name for key, name in POOLING_FLAGS.items() if config.get(key)]
    return chosen[0] if len(chosen) == 1 else None


def _join(directory: str, name: str) -> str:
    return f"{directory.strip('/')}/{name}" if directory.strip("/") else name


def _json(path: str | Path | None) -> Any:
    if path is None:
        return None
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:  # a sentence-transformers file that is there but broken
        raise ModelFileError(f"cannot read the sentence-transformers settings {path}: {error}") from None
