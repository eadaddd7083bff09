"""The end-to-end pipeline behind `layerpick run`: select, validate, export, bench into one folder.

`run` holds the stage ledger and reuse by key, `report` the run's markdown/HTML report, `commands` the
reproduce lines for each stage.

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(__name__, config="RunConfig", run="RunResult run_workflow")
