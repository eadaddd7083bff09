"""The select stage: augmented `views`, `scoring` every layer with the metrics, `rules` that pick a layer, its
`config` (`SelectConfig`), the select `job`, its `result` (`SelectReport`, report.json) and its `report`
(markdown, plots)."""

from layerpick.selection.config import SelectConfig
from layerpick.selection.job import run_select, select_and_write, select_fit_texts
from layerpick.selection.rules import (
    DEFAULT_RULE,
    LayerChoice,
    check_min_speedup,
    choose_layer,
    parse_rule,
)

__all__ = [
    "DEFAULT_RULE",
    "LayerChoice",
    "SelectConfig",
    "check_min_speedup",
    "choose_layer",
    "parse_rule",
    "run_select",
    "select_and_write",
    "select_fit_texts",
]
