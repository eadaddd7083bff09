"""The compare stage: several select/validate reports overlaid on relative depth.

`read` reads one report, `inputs` resolves what the user named, `table` builds the comparison, `plot` draws
it, `output` writes the folder atomically, `run` composes them.

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(__name__, run="Comparison compare_reports")
