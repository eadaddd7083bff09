"""The collection job behind `layerpick collect`: load, collect, summarise, and save the pooled states."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import save_file

from layerpick._util.atomic import atomic_file
from layerpick._util.disk import check_free
from layerpick._util.outputs import check_output_location
from layerpick.core.calibration import check_field, load_calibration
from layerpick.core.collect import CollectConfig, LayerStates, collect
from layerpick.core.models import LoadOptions, load_model
from layerpick.core.prompts import parse_prompt
from layerpick.errors import LayerpickError

METADATA_ALLOWANCE = 1 << 20  # bytes for the safetensors header and metadata beside the states


@dataclass
class CollectionSummary:
    model: str
    count: int
    pooling: str
    representation: str
    mean_norm: list[float]
    mean_cosine: list[float]
    notes: list[str] = field(default_factory=list)
    output: Path | None = None
    prompt: str = "none"


def collect_layers(
    model: str,
    load_options: LoadOptions = LoadOptions(),
    *,
    calibration: str | None = None,
    field: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    pooling: str | None = None,
    representation: str = "exported",
    batch_size: int = 16,
    max_length: int = 512,
    progress: bool = True,
    output: Path | None = None,
    prompt: str | None = None,
) -> CollectionSummary:
    """Collect every layer of `model` over the calibration texts (wrapped in `prompt`, a built-in name or a
    template with one {text}); optionally save them as safetensors."""
    if output is not None and Path(output).suffix != ".safetensors":
        raise LayerpickError(f"--output must end in .safetensors (got {output})")
    template = parse_prompt(prompt)
    config = CollectConfig(pooling, representation, batch_size, max_length, progress, prompt=template).check()
    load_options.check()
    if output is not None:
        check_output_location(Path(output), "--output", is_file=True)
    check_field(field, {"--calibration": calibration})
    texts = load_calibration(calibration, field=field, limit=limit, seed=seed)
    loaded = load_model(model, load_options)
    states = collect(loaded, texts.texts, config)
    if output is not None:
        metadata = {
            "model": model,
            "calibration": json.dumps(texts.describe()),
            "pooling": states.pooling,
            "representation": states.representation,
            "prompt": json.dumps(template.to_json()),
        }
        save_states(states, Path(output), metadata)
    norm, cosine = layer_summary(states)
    return CollectionSummary(
        model,
        len(texts.texts),
        states.pooling,
        states.representation,
        norm,
        cosine,
        list(loaded.notes),
        output,
        template.label,
    )


def layer_summary(states: LayerStates) -> tuple[list[float], list[float]]:
    """Per layer: the mean vector norm, and the mean cosine similarity between different texts."""
    norms, cosines = [], []
    for layer in states.pooled:
        unit = torch.nn.functional.normalize(layer.double(), dim=-1)
        n = unit.shape[0]
        total = (unit.sum(0) @ unit.sum(0)).item()
        cosines.append((total - n) / max(n * (n - 1), 1))
        norms.append(layer.norm(dim=-1).mean().item())
    return norms, cosines


def save_states(states: LayerStates, path: Path, metadata: dict[str, str]) -> None:
    """Write the pooled states atomically: a temporary file beside `path`, renamed at the end."""
    tensors = {"pooled": states.pooled.contiguous(), "token_counts": states.token_counts}
    needed = sum(t.numel() * t.element_size() for t in tensors.values()) + METADATA_ALLOWANCE
    path.parent.mkdir(parents=True, exist_ok=True)
    check_free(path, needed)
    with atomic_file(path, needed) as temporary:
        save_file(tensors, str(temporary), metadata)
