"""Validation: check layers on MTEB tasks (hub tasks, benchmarks or local folders) with one forward pass per
distinct text for every layer, a resumable run, and validation.json / validation.png.

Modules: `folders` (the local folder format), `inject` (folder data -> mteb task data, custom tasks), `tasks`
(resolving --tasks items), `config` (a run's settings), `store` (on-disk representations), `encoder` (the per-layer
mteb encoder),
`sources` (model or exported directory), `request` (what is asked, checked before loading), `evaluate` (each
(task, layer) pair through mteb), `summary` (validation.json's numbers), `run` (the run), `result` (validation.json
as `ValidationReport`),
`plot`, `materialize` (the numbers by layer are `layerpick.frontier.scores`).

Names are imported on first use (PEP 562), so that `layerpick.validation.result` and the CLI's start-up do
not pay for importing mteb.
"""

from layerpick._util.lazy import lazy_names

_HOMES = {
    "LayerEncoder": "encoder",
    "LayerSource": "encoder",
    "ReportFormatError": "errors",
    "StaticExportError": "errors",
    "TaskFormatError": "errors",
    "TaskNotFoundError": "errors",
    "ValidationFailedError": "errors",
    "read_folder": "folders",
    "materialize_tasks": "materialize",
    "write_task_folder": "materialize",
    "ValidationReport": "result",
    "ValidationRun": "result",
    "parse_layers": "request",
    "check_layer_words": "request",
    "run_validation": "run",
    "validation_output": "request",
    "RepresentationStore": "store",
    "StoreKey": "store",
    "check_static_exports": "sources",
    "ValidateConfig": "config",
    "TaskSpec": "tasks",
    "resolve_tasks": "tasks",
    "split_items": "tasks",
}

__all__, __getattr__, __dir__ = lazy_names(__name__, _HOMES)
