"""Loading a local sentence-transformers directory, and the facts the server and the benchmark read from it.

Owns: loading a directory as a `SentenceTransformer` with a one-line error when it is not one, reading the
`layerpick.json` that `layerpick export` writes beside the model, the embedding size, whether the model
L2-normalises its output.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from layerpick._util.filenames import METADATA_FILE
from layerpick.errors import ModelNotFoundError

logger = logging.getLogger(__name__)



def load_sentence_transformer(directory: str | Path, device: str = "cpu"):
    """A SentenceTransformer from a local directory; a one-line error when it is not one."""
    from sentence_transformers import SentenceTransformer

    from layerpick.core.models import resolve_device

    path = Path(directory).expanduser()
    if not (path / "modules.json").is_file():
        raise ModelNotFoundError(f"not a sentence-transformers directory (no modules.json): {path}")
    try:
        return SentenceTransformer(str(path), device=resolve_device(device))
    except (OSError, ValueError, KeyError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ModelNotFoundError(f"cannot load sentence-transformers model {path}: {first}") from error


def read_metadata(directory: str | Path) -> dict | None:
    """The `layerpick.json` written by `layerpick export`, or None for other directories."""
    path = Path(directory) / METADATA_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        logger.warning("ignoring unreadable %s: %s", path, error)
        return None
    return data if isinstance(data, dict) else None


def embedding_dimension(model) -> int:
    """The sentence embedding size (sentence-transformers 6 renamed the accessor)."""
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


def is_normalized(model) -> bool:
    """Whether the model's last step L2-normalises the sentence embedding."""
    return any(type(module).__name__ == "Normalize" for module in model)
