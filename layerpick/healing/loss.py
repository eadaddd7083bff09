"""The distillation losses a heal trains with, in sentence-transformers' loss protocol (a module called with the
tokenised texts and the teacher's vectors as labels).

`mse` is sentence-transformers' own `MSELoss`; `cosine+mse` adds one minus the cosine to it, so a unit-normalised
teacher (whose per-coordinate errors are tiny) still pulls on direction; `cosine` is the cosine term alone.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch
from torch import nn

from layerpick.healing.config import LOSSES


class CosineMSELoss(nn.Module):
    """MSE to the teacher's vectors plus (1 - cosine) (or the cosine term alone with `with_mse` False)."""

    def __init__(self, model: Any, with_mse: bool = True) -> None:
        super().__init__()
        self.model = model
        self.with_mse = with_mse

    def forward(self, sentence_features: Iterable[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        (features,) = list(sentence_features)
        embeddings = self.model(features)["sentence_embedding"]
        labels = labels.to(embeddings.dtype)
        loss = (1 - nn.functional.cosine_similarity(embeddings, labels, dim=-1)).mean()
        return loss + nn.functional.mse_loss(embeddings, labels) if self.with_mse else loss

    def get_config_dict(self) -> dict[str, Any]:
        return {"with_mse": self.with_mse}


def make_loss(name: str, model: Any) -> nn.Module:
    """The loss called `name` (one of config.LOSSES) on the student `model`."""
    if name == "mse":
        try:  # sentence-transformers 6 moved the losses (the old path still works, with a warning)
            from sentence_transformers.sentence_transformer.losses import MSELoss
        except ImportError:
            from sentence_transformers.losses import MSELoss

        return MSELoss(model)
    if name in ("cosine+mse", "cosine"):
        return CosineMSELoss(model, with_mse=name == "cosine+mse")
    raise ValueError(f"unknown loss {name!r}; choose one of {', '.join(LOSSES)}")
