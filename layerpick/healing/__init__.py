"""The heal stage: a cut trained, on unlabelled texts, to give back its teacher's sentence vectors.

`job` composes (cut by export, teacher, texts, training, fidelity, the healed export written whole); `texts`
reads and splits the texts; `teacher` says what is reproduced and keeps its vectors; `train` runs
sentence-transformers' trainer with a checkpoint per epoch; `loss` the distillation losses; `fidelity` the
label-free measures; `workspace` the resumable work folder; `result` the `HealReport` document; `render` the
terminal lines.
"""

from layerpick.healing.config import HealConfig
from layerpick.healing.job import HealError, heal_model
from layerpick.healing.result import HealReport

__all__ = ["HealConfig", "HealError", "HealReport", "heal_model"]
