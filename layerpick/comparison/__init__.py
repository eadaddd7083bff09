"""The compare stage: several select/validate reports overlaid on relative depth.

`read` reads one report, `inputs` resolves what the user named, `table` builds the comparison, `plot` draws
it, `output` writes the folder atomically, `run` composes them.
"""

from layerpick.comparison.run import Comparison, compare_reports

__all__ = ["Comparison", "compare_reports"]
