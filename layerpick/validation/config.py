"""The settings of one validation run (`ValidateConfig`): which layers, how texts are embedded, where it writes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from layerpick.frontier.choice import ChoiceOptions


@dataclass(frozen=True)
class ValidateConfig:
    """`normalize` None follows the model's own sentence-transformers pipeline (unit vectors when it ends in a
    Normalize module, as all-MiniLM-L6-v2 does), else raw pooled vectors; an export is always its own output.
    `max_length` None: the model's sentence-transformers setting, else min(512, the model's limit), as export.
    `result_cache`: where mteb's ResultCache keeps the per-layer result files (default: $MTEB_CACHE when set,
    else `output_dir`). `exported_dir` validates an export instead of a model's layers. `choice`: the
    unsupervised pick of `report`, or a layer chosen from the validated scores (`--choose`, `--max-loss`).
    `prompt`: a template, or several names (`none,eol`) to evaluate every (template, layer) pair; None takes the
    report's template. `transform`: post-pooling transforms (`core.transform`), each fitted per layer on
    `fit_texts` (a file or folder as --calibration takes; None: the report's fit set, else the embedded
    calibration set) and evaluated beside the others."""

    tasks: Sequence[str] = ()  # what `layerpick.validate` evaluates: MTEB names, benchmarks or task folders
    layers: str | Sequence[int] = "all"
    report: Path | None = None
    output_dir: Path | None = None
    pooling: str | None = None
    representation: str = "exported"
    batch_size: int = 32
    max_length: int | None = None
    normalize: bool | None = None
    exported_dir: Path | None = None
    store_dir: Path | None = None
    result_cache: Path | None = None
    task_data: Sequence[Path] = ()
    progress: bool = True
    choice: ChoiceOptions = ChoiceOptions()  # which layer validation.json names as the one to export
    prompt: str | None = None  # a template or names ("none,eol"); None: the report's template, else none
    transform: str | None = None  # post-pooling transforms ("none,whiten-256"); None: the report's, else none
    fit_texts: str | None = None  # the unlabelled texts transforms are fitted on; None: the calibration set
    field: str | None = None  # the text's field in JSONL fit texts; None: the report's (for its fit set), else `text`
    static_exports: Sequence[Path] = ()  # static exports of the model, scored beside its layers (`--static`)
    documents_by: str | None = None  # retrieval tasks' documents by this sentence-transformers model (asymmetric)
