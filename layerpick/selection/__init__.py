"""The select stage: augmented `views`, `scoring` every layer with the metrics, `rules` that pick a layer, its
`config` (`SelectConfig`), the select `job`, its `result` (`SelectReport`, report.json) and its `report`
(markdown, plots).

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    config="SelectConfig",
    job="run_select select_and_write select_fit_texts",
    rules="DEFAULT_RULE LayerChoice check_min_speedup choose_layer parse_rule",
)
