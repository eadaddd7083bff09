"""The heal stage: a cut trained, on unlabelled texts, to give back its teacher's sentence vectors.

`job` composes (cut by export, teacher, texts, training, fidelity, the healed export written whole); `blocks`
says which of the teacher's blocks the cut starts from; `texts` reads and splits the texts; `teacher` says what
is reproduced and keeps its vectors; `train` runs sentence-transformers' trainer with checkpoints per epoch and
within long epochs; `loss` the distillation losses; `fidelity` the label-free measures; `sweep` heals several K
and keeps the shallowest clearing a fidelity line; `workspace` the resumable work folder; `result` the
`HealReport` document; `render` the terminal lines.

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    config="HealConfig",
    job="HealError heal_model",
    result="HealReport",
    plan="DEFAULT_EPOCHS DEFAULT_MINUTES HealPlan default_cuts probe_plan",
    sweep="DEFAULT_MAX_LOSS HealSweep check_max_loss check_sweep check_sweep_blocks heal_layers heal_or_sweep "
    "parse_layers",
)
