"""Load a model and its tokenizer from a registry alias, a local directory, a GGUF file or a hub id.

The model is the bare `*Model` (no LM head), in eval mode, with gradients off. GGUF weights are dequantised
by transformers once and cached as safetensors (see `gguf_cache`), so later loads take seconds.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from layerpick.core import registry, surgery
from layerpick.core.gguf_cache import converted_gguf_dir
from layerpick.errors import LayerpickError, ModelNotFoundError

logger = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEVICES = ("cpu", "cuda", "mps", "auto")


@dataclass(frozen=True)
class LoadOptions:
    """How to load a model; the defaults are safe (no remote code, safetensors only, float32 on CPU)."""

    revision: str | None = None
    dtype: str = "float32"
    device: str = "cpu"
    device_map: str | None = None
    trust_remote_code: bool = False
    allow_pickle: bool = False
    gguf_file: str | None = None

    def cli_flags(self) -> list[str]:
        """The command-line flags that give these options (only those that differ from the defaults)."""
        default = LoadOptions()
        flags = [word for name in ("revision", "dtype", "device", "device_map", "gguf_file")
                 if getattr(self, name) != getattr(default, name)
                 for word in (f"--{name.replace('_', '-')}", str(getattr(self, name)))]
        return flags + [flag for flag, on in (("--trust-remote-code", self.trust_remote_code),
                                              ("--allow-pickle", self.allow_pickle)) if on]


@dataclass
class LoadedModel:
    """A loaded model with the facts later stages report: where it came from and what it is."""

    model: nn.Module
    tokenizer: object
    name: str
    path: str
    revision: str | None
    family: surgery.Family
    notes: list[str] = field(default_factory=list)

    @property
    def num_layers(self) -> int:
        return surgery.num_layers(self.model)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device


def resolve_device(device: str) -> str:
    if device not in DEVICES:
        raise LayerpickError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")
    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def load_model(name_or_path: str, options: LoadOptions = LoadOptions()) -> LoadedModel:
    """Load `name_or_path` (alias, local directory or hub id) as a bare model plus tokenizer."""
    if options.dtype not in DTYPES:
        raise LayerpickError(f"unknown dtype {options.dtype!r}; choose one of {', '.join(DTYPES)}")
    path, gguf_file, notes = _resolve_source(name_or_path, options)
    if gguf_file:
        path = str(converted_gguf_dir(Path(path), gguf_file))
        if not notes:
            notes.append("weights dequantised from a GGUF file: an approximation of the original model")
    model = _load_weights(path, options, from_gguf=bool(gguf_file))
    tokenizer = load_tokenizer(path, options)
    family = surgery.family_for(model)
    return LoadedModel(model, tokenizer, name_or_path, path, options.revision, family, notes)


def load_tokenizer(path: str, options: LoadOptions = LoadOptions()):
    """The model's tokenizer, padding on the right (exact for causal models and absolute positions)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        path, revision=options.revision, trust_remote_code=options.trust_remote_code
    )
    tokenizer.padding_side = "right"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer


def _resolve_source(name: str, options: LoadOptions) -> tuple[str, str | None, list[str]]:
    entry = registry.get_entry(name)
    if entry is not None:
        entry, source = registry.resolve_alias(name)
        return str(source.directory), source.gguf_file, [entry.note]
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return str(path.parent), path.name, []
    if path.is_dir():
        return str(path), options.gguf_file, []
    if _looks_like_path(name):
        raise ModelNotFoundError(f"model path not found: {name}")
    if "/" not in name:
        known = ", ".join(registry.ENTRIES)
        raise ModelNotFoundError(f"unknown model alias {name!r} (known aliases: {known}; or pass a hub id or a path)")
    return name, options.gguf_file, []


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or name.endswith(".gguf") or name.count("/") > 1


def _load_weights(path: str, options: LoadOptions, *, from_gguf: bool) -> nn.Module:
    from transformers import AutoModel

    kwargs = dict(
        revision=None if from_gguf else options.revision,
        dtype=DTYPES[options.dtype],
        trust_remote_code=options.trust_remote_code,
        use_safetensors=None if options.allow_pickle else True,
    )
    if options.device_map:
        kwargs["device_map"] = options.device_map
    try:
        model = AutoModel.from_pretrained(path, **kwargs)
    except (OSError, ValueError) as error:
        raise ModelNotFoundError(_explain_load_error(path, error, options)) from error
    if not options.device_map:
        model = model.to(resolve_device(options.device))
    model.eval()
    model.requires_grad_(False)
    return model


def _explain_load_error(path: str, error: Exception, options: LoadOptions) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if not options.allow_pickle and ("safetensors" in text.lower() or ".bin" in text):
        return f"cannot load {path}: no safetensors weights found (pass --allow-pickle to trust pickle files)"
    return f"cannot load model {path}: {text}"
