"""The heal stage: a cut trained, on unlabelled texts, to give back its teacher's sentence vectors.

`job` composes (cut by export, teacher, texts, training, fidelity, the healed export written whole); `texts`
reads and splits the texts; `teacher` says what is reproduced and keeps its vectors; `train` runs
sentence-transformers' trainer with a checkpoint per epoch; `loss` the distillation losses; `fidelity` the
label-free measures; `sweep` heals several K and keeps the shallowest clearing a fidelity line; `workspace` the
resumable work folder; `result` the `HealReport` document; `render` the terminal lines.
"""

from layerpick.healing.config import HealConfig
from layerpick.healing.job import HealError, heal_model
from layerpick.healing.result import HealReport
from layerpick.healing.sweep import HealSweep, check_sweep, heal_layers, heal_or_sweep

__all__ = [
    "HealConfig",
    "HealError",
    "HealReport",
    "HealSweep",
    "check_sweep",
    "heal_layers",
    "heal_model",
    "heal_or_sweep",
]
