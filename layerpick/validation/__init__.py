"""Validation: check layers on MTEB tasks (hub tasks, benchmarks or local folders) with one forward pass per
distinct text for every layer, a resumable run, and validation.json / validation.png.

Modules: `folders` (the local folder format), `inject` (folder data -> mteb task data, custom tasks), `tasks`
(resolving --tasks items), `store` (on-disk representations), `encoder` (the per-layer mteb encoder),
`sources` (model or exported directory), `run` (the run), `summary` (the numbers), `plot`, `materialize`.
"""

from layerpick.validation.encoder import LayerEncoder, LayerSource
from layerpick.validation.errors import ReportFormatError, TaskFormatError, TaskNotFoundError, ValidationFailedError
from layerpick.validation.folders import read_folder
from layerpick.validation.materialize import materialize_tasks, write_task_folder
from layerpick.validation.run import ValidationReport, parse_layers, run_validation
from layerpick.validation.store import RepresentationStore, StoreKey
from layerpick.validation.tasks import TaskSpec, resolve_tasks, split_items

__all__ = [
    "LayerEncoder",
    "LayerSource",
    "ReportFormatError",
    "RepresentationStore",
    "StoreKey",
    "TaskFormatError",
    "TaskNotFoundError",
    "TaskSpec",
    "ValidationFailedError",
    "ValidationReport",
    "materialize_tasks",
    "parse_layers",
    "read_folder",
    "resolve_tasks",
    "run_validation",
    "split_items",
    "write_task_folder",
]
