"""The "layer k" core: loading a model, the per-family facts, one pass over texts -> every layer's states.

`models` loads (aliases from `registry`, GGUF conversion cached by `gguf_cache`), `surgery` knows each
architecture family (blocks, final norm, the cut), `collect` runs the single forward pass and `pooling` turns
token states into one vector per text, `calibration` owns the embedded text set, `collect_job` the
`layerpick collect` job that saves pooled states.
"""
