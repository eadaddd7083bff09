"""The select stage: augmented `views`, `scoring` every layer with the metrics, `rules` that pick a layer,
the select `job` and its `report` (JSON, markdown, plots)."""

from layerpick.selection.job import SelectConfig, run_select
from layerpick.selection.rules import (
    DEFAULT_RULE,
    LayerChoice,
    choose_layer,
    parse_rule,
)

__all__ = ["DEFAULT_RULE", "LayerChoice", "SelectConfig", "choose_layer", "parse_rule", "run_select"]
