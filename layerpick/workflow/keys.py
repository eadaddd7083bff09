"""What each stage of `layerpick run` depends on: the inputs checked before the first stage (`input_facts`: the
model's content, the calibration texts' hash, each task's data revision) and each stage's key, a hash of its own
inputs and of the keys of the stages it builds on (`stage_keys`), which the ledger compares to reuse a stage.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from layerpick._util.filenames import METADATA_FILE
from layerpick.core.calibration import load_calibration
from layerpick.core.fingerprint import model_fingerprint, same_place
from layerpick.core.fit_texts import expand_auto
from layerpick.core.models import LoadOptions
from layerpick.core.prompts import parse_prompts
from layerpick.core.transform import DEFAULT_TRANSFORM, parse_transforms
from layerpick.errors import LayerpickError
from layerpick.exporting import check_graph_request
from layerpick.frontier.choice import ChoiceError
from layerpick.selection import check_min_speedup, select_fit_texts
from layerpick.selection.config import SelectConfig
from layerpick.workflow import heal_stage
from layerpick.workflow.config import RunConfig


def stage_keys(model: str, load_options: LoadOptions, config: RunConfig, inputs: dict[str, Any]) -> dict[str, str]:
    """Each stage's key covers its own inputs and the keys of the stages it builds on. `inputs` (from
    `input_facts`) adds what names alone do not tell: the calibration texts' hash, each task's data revision."""
    base = {
        "model": inputs["model"],
        "model_content": inputs["model_content"],
        "load": dataclasses.asdict(load_options),
    }
    select = _digest(
        {
            **base,
            "select": _without_progress(config.select),
            "calibration": inputs["calibration"],
            **({"fit_texts": inputs["fit_texts"]} if inputs.get("fit_texts") else {}),
        }
    )
    validate = _digest(
        {
            "select": select,
            "tasks": inputs["tasks"],
            "layers": config.layers,
            "batch": config.validate_batch_size,
            "max_length": config.validate_max_length,
            "normalize": config.normalize,
            "choice": dataclasses.asdict(config.choice),
            **({"static_exports": inputs["static_exports"]} if inputs.get("static_exports") else {}),
        }
    )
    export = _digest(
        {
            "select": select,
            "normalize": config.normalize,
            "choice": {"validate": validate, **dataclasses.asdict(config.choice)} if config.choice.validated else None,
            **(
                {"heal": heal_stage.heal_key(config), "minutes": config.heal_minutes} if config.heal is not None else {}
            ),
            **({"graph": [config.format, config.quantize]} if config.format != "sentence-transformers" else {}),
        }
    )
    bench = _digest(
        {
            "export": export,
            "bench": dataclasses.asdict(config.bench) if config.bench else None,
            "backend": config.bench_backend,
        }
    )
    healed = _digest({"export": export, "validate": validate})
    return {"select": select, "validate": validate, "export": export, "bench": bench, "validate-export": healed}


def input_facts(model: str, config: RunConfig) -> dict[str, Any]:
    """Check the rule, layers, bench settings and tasks before the first stage spends minutes on the model,
    and return what the stage keys need beyond names: the model's resolved path, the calibration texts'
    hash and each task's data revision (a content hash for a local folder)."""
    config.select.check()
    check_min_speedup(config.select.min_speedup)
    heal_stage.check_heal(model, config)
    if config.format not in ("sentence-transformers", "onnx"):
        raise LayerpickError(
            f"run exports a sentence-transformers model (--format onnx: with its ONNX graph), not --format "
            f"{config.format}; distil the export afterwards with `layerpick export DIR --format static`"
        )
    check_graph_request(config.format, config.quantize)
    if config.choice.validated and not config.tasks:
        raise ChoiceError("--choose validated and --max-loss choose from validated scores: give --tasks")
    if config.static_exports and not config.tasks:
        raise LayerpickError("--static is scored beside the layers on the validation's tasks: give --tasks")
    if config.select.prompt is not None:
        parse_prompts(config.select.prompt)
    select = config.select
    texts = load_calibration(select.calibration, field=select.field, limit=select.limit, seed=select.scoring.seed)
    source = select.fit_texts if select.fit_texts is not None else select.calibration
    fit = select_fit_texts(
        parse_transforms(
            expand_auto(select.transform or DEFAULT_TRANSFORM, model, LoadOptions(), source, select.field)
        ),
        select,
    )
    if config.bench is not None:
        config.bench.validate(prefix="--bench-")  # run's options: --bench-texts, --bench-repeats
    facts = {
        "model": str(Path(model).resolve()) if Path(model).exists() else model,
        "model_content": model_fingerprint(model),  # weights, config or tokenizer changed in place: a new key
        "calibration": texts.describe()["sha256"],
        "tasks": [],
    }
    if fit is not None:  # the fit texts' content, not only their file name
        facts["fit_texts"] = fit.describe()["sha256"]
    if config.tasks:
        from layerpick.validation import (  # mteb only when validating
            check_layer_words,
            resolve_tasks,
        )

        check_layer_words(config.layers)
        facts["tasks"] = [
            {"name": spec.name, **spec.describe()} for spec in resolve_tasks(list(config.tasks), config.task_data)
        ]
    if config.static_exports:
        facts["static_exports"] = _static_facts(config.static_exports)
    return facts


def _static_facts(paths: tuple[Path, ...]) -> list[dict[str, str]]:
    """Each `--static` export as the validate key sees it: its folder and its layerpick.json's hash (a table
    exported again into the same folder is scored again). A folder that is no static export is refused here."""
    from layerpick.validation import check_static_exports

    check_static_exports(paths)
    return [
        {
            "path": str(Path(path).resolve()),
            "sha256": hashlib.sha256((Path(path) / METADATA_FILE).read_bytes()).hexdigest(),
        }
        for path in paths
    ]


def _without_progress(select: SelectConfig) -> dict[str, Any]:
    """Select's settings as its key reads them: a text source typed relative or absolute is the same place."""
    data = dataclasses.asdict(select)
    data["collect"].pop("progress", None)
    for name in ("calibration", "fit_texts"):
        data[name] = same_place(data[name]) if data[name] is not None else None
    return data


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]
