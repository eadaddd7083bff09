"""Load a model and its tokenizer from a registry alias, a local directory, a GGUF file or a hub id.

The model is the bare `*Model` (no LM head), in eval mode, with gradients off. GGUF weights are dequantised
by transformers once and cached as safetensors (see `gguf_cache`), so later loads take seconds. The options
are checked before anything is read (`LoadOptions.check`: dtype, and that the device exists here); a hub id
is settled by `hub` (cache or one quick request, never minutes of retries); a broken file is named by
`load_errors`; a tokenizer that is not the model's vocabulary (its files left out) is refused by
`vocabulary`; a sentence-transformers source brings its own pipeline (`st_source`), which export and
validation follow. With `device_map` (and `max_memory`) accelerate spreads the model over GPUs, the CPU and the
disk; `execution_device` says where a module of such a model computes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from layerpick.core import registry, surgery
from layerpick.core.gguf_cache import converted_gguf_dir
from layerpick.core.devices import resolve_device
from layerpick.core.load_options import DTYPE_NAMES, LoadOptions, parse_max_memory as parse_max_memory
from layerpick.core.hub import HubSource, hub_file, resolve_hub_id, suggestion
from layerpick.core.load_errors import loading
from layerpick.core.pooling import POOLING_MODES
from layerpick.core.st_source import (
    Pipeline,
    local_fetcher,
    lowercase_tokenizer,
    read_pipeline,
)
from layerpick.core.vocabulary import check_vocabulary
from layerpick.errors import LayerpickError, LayerRangeError, ModelNotFoundError

logger = logging.getLogger(__name__)

DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}


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
    pipeline: Pipeline = field(default_factory=Pipeline)

    @property
    def num_layers(self) -> int:
        return surgery.num_layers(self.model)

    @property
    def device(self) -> torch.device:
        """Where the model's inputs go: its first parameter's device, or under a device map the device its first
        part computes on (offloaded weights sit on the meta device)."""
        return execution_device(self.model)

    @property
    def default_pooling(self) -> str:
        """The source's own sentence-transformers pooling when layerpick has it, else the family's."""
        own = self.pipeline.pooling
        return own if own in POOLING_MODES else self.family.default_pooling


def execution_device(module: nn.Module) -> torch.device:
    """Where `module` computes: under a device map, the execution device accelerate's hook gives its first part
    (its weights may be offloaded to the CPU or disk, on the meta device meanwhile); else its first parameter's."""
    if hasattr(module, "_hf_hook") or getattr(module, "hf_device_map", None):
        for part in module.modules():
            device = getattr(getattr(part, "_hf_hook", None), "execution_device", None)
            if device is not None:
                return torch.device(device)
    return next(module.parameters()).device


@dataclass(frozen=True)
class _Source:
    """Where a name points: what transformers loads (a folder or a hub id), a GGUF file in it, notes."""

    path: str
    gguf_file: str | None = None
    notes: tuple[str, ...] = ()
    hub: HubSource | None = None


def load_model(name_or_path: str, options: LoadOptions = LoadOptions()) -> LoadedModel:
    """Load `name_or_path` (alias, local directory or hub id) as a bare model plus tokenizer."""
    options.check()
    source = _resolve_source(name_or_path, options)
    path, notes = source.path, list(source.notes)
    if source.gguf_file:
        path = str(converted_gguf_dir(Path(path), source.gguf_file))
        if not notes:
            notes.append("weights dequantised from a GGUF file: an approximation of the original model")
    local_only = bool(source.hub and source.hub.local_only)
    with loading(_files_of(source, path), allow_pickle=options.allow_pickle):
        model = _load_weights(path, options, from_gguf=bool(source.gguf_file), local_only=local_only)
        tokenizer = load_tokenizer(path, options, local_only=local_only)
    check_vocabulary(tokenizer, model, path)
    family = surgery.family_for(model)
    pipeline = _pipeline(source, tokenizer, family, notes)
    return LoadedModel(model, tokenizer, name_or_path, path, options.revision, family, notes, pipeline)


def peek_hidden_size(name_or_path: str, options: LoadOptions = LoadOptions()) -> int | None:
    """The model's hidden size from its config.json alone, before any weights load; None where that file is not
    at hand without loading (a GGUF file, a hub id not cached) or the name does not resolve (the load says why)."""
    data = _peek_config(name_or_path, options)
    return next((data[key] for key in ("hidden_size", "n_embd", "d_model") if isinstance(data.get(key), int)), None)


def peek_num_layers(name_or_path: str, options: LoadOptions = LoadOptions()) -> int | None:
    """The model's layer count from its config.json alone (a multimodal config's `text_config` where it has one),
    before any weights load; None where that file is not at hand or states no count."""
    data = _peek_config(name_or_path, options)
    data = data["text_config"] if isinstance(data.get("text_config"), dict) else data
    return next(
        (data[key] for key in ("num_hidden_layers", "n_layer", "num_layers") if isinstance(data.get(key), int)), None
    )


def peek_model_type(name_or_path: str, options: LoadOptions = LoadOptions()) -> str | None:
    """The model's `model_type` from its config.json alone (its `text_config`'s where it has one); None where that
    file is not at hand or names none."""
    data = _peek_config(name_or_path, options)
    data = data["text_config"] if isinstance(data.get("text_config"), dict) else data
    return data["model_type"] if isinstance(data.get("model_type"), str) else None


def _peek_config(name_or_path: str, options: LoadOptions) -> dict:
    """The model's config.json where it is at hand without loading and readable; else {}."""
    config = _peek_file(name_or_path, options, "config.json")
    try:
        data = json.loads(config.read_text(encoding="utf-8")) if config is not None else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def peek_is_embedder(name_or_path: str, options: LoadOptions = LoadOptions()) -> bool:
    """Whether the model is a trained sentence embedder (it ships its own sentence-transformers pipeline,
    modules.json), told from its files before any weights load."""
    return _peek_file(name_or_path, options, "modules.json") is not None


def _peek_file(name_or_path: str, options: LoadOptions, filename: str) -> Path | None:
    """One of the model's own files, where it is at hand without loading; else None."""
    try:
        source = _resolve_source(name_or_path, options)
    except LayerpickError:
        return None
    if source.hub is not None:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(source.hub.repo_id, filename, revision=source.hub.revision)
        return Path(found) if isinstance(found, str) else None
    path = Path(source.path) / filename
    return path if path.is_file() and not (source.gguf_file and filename == "config.json") else None


def _pipeline(source: "_Source", tokenizer, family: surgery.Family, notes: list[str]) -> Pipeline:
    """The source's own sentence-transformers pipeline; its lower-casing goes into the tokenizer (as
    sentence-transformers does), a pooling layerpick lacks into the notes."""
    fetch = (lambda name: hub_file(source.hub, name)) if source.hub else local_fetcher(source.path)
    pipeline = read_pipeline(fetch)
    if pipeline.do_lower_case:
        lowercase_tokenizer(tokenizer)
    if pipeline.pooling and pipeline.pooling not in POOLING_MODES:
        notes.append(
            f"the source pools with {pipeline.pooling!r}, which layerpick does not implement; "
            f"layerpick uses {family.default_pooling!r} pooling"
        )
    return pipeline


def load_tokenizer(path: str, options: LoadOptions = LoadOptions(), *, local_only: bool = False):
    """The model's tokenizer, padding on the right (exact for causal models and absolute positions)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        path, revision=options.revision, trust_remote_code=options.trust_remote_code, local_files_only=local_only
    )
    tokenizer.padding_side = "right"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer


def _resolve_source(name: str, options: LoadOptions) -> _Source:
    entry = registry.get_entry(name)
    if entry is not None:
        entry, found = registry.resolve_alias(name)
        return _Source(str(found.directory), found.gguf_file, (entry.note,))
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return _Source(str(path.parent), path.name)
    if path.is_dir():
        return _Source(str(path), options.gguf_file)
    if path.is_file():
        raise ModelNotFoundError(f"model path is a file, not a model folder (or a .gguf file): {name}")
    aliases = tuple(registry.ENTRIES)
    if _looks_like_path(name):
        raise ModelNotFoundError(f"model path not found: {name}")
    if "/" not in name:
        raise ModelNotFoundError(
            f"unknown model alias {name!r}{suggestion(name, aliases)} (known aliases: "
            f"{', '.join(aliases)}; or pass a hub id or a path)"
        )
    hub = resolve_hub_id(name, options.revision, needed_file=options.gguf_file or "config.json", aliases=aliases)
    return _Source(name, options.gguf_file, hub=hub)


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or name.endswith(".gguf") or name.count("/") > 1


def _files_of(source: _Source, path: str) -> str:
    """Where a failed load's files can be checked: the folder, or a hub id's cached snapshot."""
    if source.hub is None:
        return path
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(source.hub.repo_id, "config.json", revision=source.hub.revision)
    return str(Path(found).parent) if isinstance(found, str) else path


def _load_weights(path: str, options: LoadOptions, *, from_gguf: bool, local_only: bool = False) -> nn.Module:
    from transformers import AutoModel

    kwargs = dict(
        revision=None if from_gguf else options.revision,
        dtype=DTYPES[options.dtype],
        trust_remote_code=options.trust_remote_code,
        use_safetensors=None if options.allow_pickle else True,
        local_files_only=local_only,
    )
    if options.device_map:
        kwargs["device_map"] = options.device_map
    if options.max_memory:
        kwargs["max_memory"] = parse_max_memory(options.max_memory)
    model = AutoModel.from_pretrained(path, **kwargs)
    if not options.device_map:
        model = model.to(resolve_device(options.device))
    model.eval()
    model.requires_grad_(False)
    return model


# CollectConfig's default: what selection scored, unless the model caps lower; also the export's.
DEFAULT_MAX_SEQ_LENGTH = 512


def resolve_max_seq_length(loaded: LoadedModel, requested: int | None) -> int:
    """The requested length (checked against the model's limit), else the source's sentence-transformers
    setting, else min(the model's and tokenizer's limits, 512)."""
    limit = surgery.position_limit(loaded.model.config)
    if requested is not None:
        if requested < 1 or (limit is not None and requested > limit):
            raise LayerRangeError(f"--max-seq-length {requested} is out of range: this model accepts 1..{limit}")
        return requested
    if loaded.pipeline.max_seq_length is not None:
        own = loaded.pipeline.max_seq_length
        return own if limit is None else min(own, limit)
    candidates = [DEFAULT_MAX_SEQ_LENGTH, limit, getattr(loaded.tokenizer, "model_max_length", None)]
    return min(c for c in candidates if isinstance(c, int) and c > 0)
