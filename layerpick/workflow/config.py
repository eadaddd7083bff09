"""The settings of one `layerpick run` beyond selecting (`RunConfig`: tasks and layers validated, the export's
normalisation, the bench, the choice, the heal), free of torch so that the command line's options read their
defaults without importing it (`workflow.run` runs the stages)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from layerpick.benchmark.config import BenchConfig
from layerpick.frontier.choice import ChoiceOptions
from layerpick.healing.config import HealConfig
from layerpick.healing import DEFAULT_EPOCHS, DEFAULT_MINUTES
from layerpick.selection.config import SelectConfig


AUTO, NONE = "auto", "none"  # `--heal-layers`: heal a trained embedder whose last layer select keeps; never heal


@dataclass(frozen=True)
class RunConfig:
    """What `run_workflow` does beyond selecting: which tasks and layers to validate, the export, the bench."""

    tasks: tuple[str, ...] = ()
    layers: str = "selected"
    task_data: tuple[Path, ...] = ()
    validate_batch_size: int = 32
    validate_max_length: int | None = None
    normalize: bool | None = None  # None: as the model's own sentence-transformers pipeline
    bench: BenchConfig | None = BenchConfig()
    select: SelectConfig = SelectConfig()
    choice: ChoiceOptions = ChoiceOptions()  # the rule's pick, or a layer chosen from the validation
    force: bool = False
    static_exports: tuple[Path, ...] = ()  # static exports validated beside the layers (`--static`; needs tasks)
    # `--heal-layers`: DIR/model is a heal's (`workflow.heal_stage`), not a plain cut. `auto` (the default) heals
    # where select keeps the last layer of a trained embedder; None (`none`) never heals.
    heal: HealConfig | None = HealConfig(layers=AUTO, epochs=DEFAULT_EPOCHS)
    heal_minutes: float | None = DEFAULT_MINUTES  # the first cut's texts and epochs fitted to it (None: as given)
    format: str = "sentence-transformers"  # "onnx": the export (plain or healed) carries its ONNX graph too
    quantize: str | None = None  # "int8" (with format "onnx"): and its int8 graph; the bench times the export on it

    @property
    def bench_backend(self) -> str:
        """What runs the export in the bench stage: the fastest graph it carries (the full model runs on torch)."""
        if self.format != "onnx":
            return "torch"
        return "onnx-int8" if self.quantize == "int8" else "onnx"
