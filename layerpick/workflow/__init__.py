"""The end-to-end pipeline behind `layerpick run`: select, validate, export, bench into one folder.

`run` holds the stage ledger and reuse by key, `report` the run's markdown/HTML report, `commands` the
reproduce lines for each stage.
"""

from layerpick.workflow.run import RunConfig, RunResult, run_workflow

__all__ = ["RunConfig", "RunResult", "run_workflow"]
