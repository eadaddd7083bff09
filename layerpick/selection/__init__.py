"""The select stage: augmented `views`, `scoring` every layer with the metrics, `rules` that pick a layer, its
`config` (`SelectConfig`), the select `job`, its `result` (`SelectReport`, report.json) and its `report`
(markdown, plots).

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

_HOMES = {
    "SelectConfig": "config",
    "run_select": "job",
    "select_and_write": "job",
    "select_fit_texts": "job",
    "DEFAULT_RULE": "rules",
    "LayerChoice": "rules",
    "check_min_speedup": "rules",
    "choose_layer": "rules",
    "parse_rule": "rules",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
