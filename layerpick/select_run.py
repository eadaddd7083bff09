"""The select job's former import path, kept so that existing code keeps working; see `layerpick.selection`."""

from layerpick.selection.job import (
    SelectConfig,
    default_output,
    run_select,
    select_and_write,
)

__all__ = ["SelectConfig", "default_output", "run_select", "select_and_write"]
