"""A heal's result as a document (`HealReport`, "layerpick-heal/1"): the export it wrote, what the cut was trained
to reproduce, on which texts, how, and its fidelity to the teacher before and after on the held-out texts.

The same JSON is the `heal` section of the healed export's layerpick.json (`ExportMetadata.heal`), so the export
says what was done to it; `HealReport.from_json(metadata.heal)` reads it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from layerpick._util.documents import Document
from layerpick.healing.fidelity import Fidelity


@dataclass(frozen=True)
class HealReport(Document):
    """One heal: `teacher` {kind, description, model, dimension}, `texts` {source, count, sha256, train, held_out,
    passages}, `training` {epochs, learning_rate, batch_size, seed, loss, steps, final_loss, losses, device, bf16,
    resumed_from_epoch, minutes, memory_floor_gb (`healing.memory`)}, fidelity before and after on the held-out
    texts."""

    output: str
    model: str
    layer: int
    num_layers: int
    teacher: dict[str, Any]
    texts: dict[str, Any]
    training: dict[str, Any]
    before: Fidelity
    after: Fidelity
    command: str
    versions: dict[str, str | None] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    FORMAT: ClassVar[str] = "layerpick-heal/1"
    WHAT: ClassVar[str] = "a layerpick heal report"
    NOUN: ClassVar[str] = "heal report"
    REQUIRED: ClassVar[tuple[str, ...]] = (
        "output",
        "model",
        "layer",
        "num_layers",
        "teacher",
        "texts",
        "training",
        "before",
        "after",
        "command",
    )

    @classmethod
    def _decode(cls, values: dict[str, Any], extra: dict[str, Any], where: str) -> HealReport:
        fidelity = {key: Fidelity(**values[key]) for key in ("before", "after")}
        return cls(**{**values, **fidelity}, extra=extra)

    def heal_section(self) -> dict[str, Any]:
        """The healed export's heal section (`heal --json` prints it; a sweep's adds the sweep)."""
        return self.to_json()

    @property
    def final_loss(self) -> float | None:
        return self.training.get("final_loss")

    @property
    def gained(self) -> float:
        """How much the mean cosine to the teacher rose."""
        return self.after.cosine - self.before.cosine
