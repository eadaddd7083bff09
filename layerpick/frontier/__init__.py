"""The quality-speed frontier, which select, validate, bench and run all draw on: `choice` (which layers are on
the frontier, and the choices made on it from validated scores: `ChoiceOptions`, `--choose`, `--max-loss`) and
`plot` (the matplotlib figures of layers against speed-up), and `scores` (task scores by layer: their mean, the
selected/last/best layers, correlations with the unsupervised metrics) and `table` (a validation's frontier as
text). No stage owns it; each imports it."""
