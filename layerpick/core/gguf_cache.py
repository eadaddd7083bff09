"""Convert a GGUF file once into a cached safetensors model directory.

transformers dequantises GGUF weights to float on every load (15-50 s), and a GGUF-loaded model refuses
`save_pretrained`. So the model is rebuilt from its config without `quantization_config`, given the
dequantised state dict, and saved with its tokenizer under the cache root. The directory is written to a
temporary name and renamed at the end, so an interrupted conversion leaves nothing half-written.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from layerpick._util.atomic import atomic_directory
from layerpick._util.cache import cache_root
from layerpick._util.outputs import check_output_location
from layerpick.core.load_errors import gguf_problem, loading
from layerpick.errors import ModelFileError, ModelNotFoundError

logger = logging.getLogger(__name__)
MARKER = "layerpick-gguf.json"


def converted_gguf_dir(directory: Path, gguf_file: str) -> Path:
    """The cached safetensors directory for `directory/gguf_file`, converting it on first use."""
    source = directory / gguf_file
    if not source.is_file():
        raise ModelNotFoundError(f"GGUF file not found: {source}")
    problem = gguf_problem(source)
    if problem:
        raise ModelFileError(f"cannot load {source}: it {problem}")
    target = cache_root() / "gguf" / f"{source.stem}-{_fingerprint(source)}"
    if (target / MARKER).is_file():
        return target
    check_output_location(target, "the layerpick cache (LAYERPICK_CACHE)")
    logger.info("converting %s to safetensors (once; cached in %s)", source.name, target)
    _convert(source, target)
    return target


def _fingerprint(source: Path) -> str:
    stat = source.stat()
    key = f"{source.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def _convert(source: Path, target: Path) -> None:
    from transformers import AutoModel, AutoTokenizer

    with loading(source, what="GGUF file"):
        quantised = AutoModel.from_pretrained(str(source.parent), gguf_file=source.name)
        tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    config = quantised.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = type(quantised)(config)
    model.load_state_dict(quantised.state_dict())
    with atomic_directory(target) as staging:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        (staging / MARKER).write_text(json.dumps({"gguf_file": str(source), "dequantised": True}, indent=2))
