"""What a validation is asked to do, resolved and checked before any model loads.

Owns: the checks of every option and output location before minutes go into loading and encoding; the layers
to evaluate (`--layers`: its words and numbers, checked against the model once loaded); the templates and
transforms to evaluate, the select report's own leading; the select report read and checked against the model;
and where a validation writes (its output folder, and the folder of mteb's per-layer result files).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from layerpick._util.outputs import check_output_location, model_output_dir
from layerpick.core.collect import CollectConfig
from layerpick.core.layer_list import check_layer_syntax, parse_layer_list
from layerpick.core.models import LoadOptions
from layerpick.core.prompts import DEFAULT_PROMPT, Prompt, parse_prompts, prompt_from_json
from layerpick.core.transform import IDENTITY, TransformSpec, parse_transforms, transform_from_json
from layerpick.errors import LayerpickError
from layerpick.selection.result import SelectReport, read_select_report
from layerpick.validation.config import ValidateConfig
from layerpick.validation.documents import document_folder
from layerpick.validation.sources import Setup, check_static_exports


def check_before_loading(load_options: LoadOptions, config: ValidateConfig, outputs: dict[str, Path]) -> None:
    """Every option and output location, before minutes go into loading and encoding."""
    load_options.check()
    max_length = 1 if config.max_length is None else config.max_length
    CollectConfig(config.pooling, config.representation, config.batch_size, max_length).check()
    if isinstance(config.layers, str):
        check_layer_words(config.layers)
    if config.static_exports and config.exported_dir:
        raise LayerpickError("--static scores tables beside a model's layers; give a model, not --exported")
    if config.documents_by is not None:
        document_folder(config.documents_by, load_options)
    check_static_exports(config.static_exports)
    for option, path in outputs.items():
        check_output_location(path, option)


def validation_prompts(value: str | None, select: SelectReport | None) -> tuple[Prompt, ...]:
    """The templates to evaluate, the one whose results lead the document first: `--prompt` (a template or
    names), else the select report's template, else the default. The report's template leads when listed."""
    if value is None:
        return (prompt_from_json(select.prompt),) if select is not None else parse_prompts(DEFAULT_PROMPT)
    prompts = parse_prompts(value)
    if select is not None:
        chosen = prompt_from_json(select.prompt)
        prompts = tuple(sorted(prompts, key=lambda p: p.template != chosen.template))
    return prompts


def validation_transforms(value: str | None, select: SelectReport | None) -> tuple[TransformSpec, ...]:
    """`--transform` (names), else the select report's transform, else none; the report's leads when listed."""
    chosen = transform_from_json(select.transform) if select is not None else IDENTITY
    if value is None:
        return (chosen,)
    return tuple(sorted(parse_transforms(value), key=lambda spec: spec != chosen))


LAYER_WORDS = ("all", "last", "selected")
LAYER_GRAMMAR = "all, selected, last or comma-separated integers"


def parse_layers(layers: str | Sequence[int], num_layers: int, selected: int | None = None) -> list[int]:
    """'all' -> 0..L; 'selected' -> the select report's layer (`selected`) and the last; 'last' -> L; '3,5' or [3, 5]
    -> those;
    words and numbers mix ('selected,4,8'). Checked against 0..L."""
    text = layers if isinstance(layers, str) else ",".join(map(str, layers))
    words = {
        "all": lambda: range(num_layers + 1),
        "last": lambda: [num_layers],
        "selected": lambda: _selected(selected, num_layers),
    }
    return parse_layer_list(text, first=0, last=num_layers, words=words, grammar=LAYER_GRAMMAR)


def check_layer_words(layers: str) -> None:
    """The syntax of --layers, checked before any model is loaded (the range needs the model)."""
    check_layer_syntax(layers, LAYER_WORDS, LAYER_GRAMMAR)


def _selected(selected: int | None, num_layers: int) -> list[int]:
    if selected is None:
        raise LayerpickError("--layers selected needs --report (a select report.json)")
    return [selected, num_layers]


def results_root(output: Path) -> Path:
    """Where mteb's ResultCache keeps the per-layer result files: $MTEB_CACHE when set, else the output."""
    return Path(os.environ["MTEB_CACHE"]).expanduser() if os.environ.get("MTEB_CACHE") else output


def validation_output(model: str | None, config: ValidateConfig) -> Path:
    """Where a validation writes: `config.output_dir`, else the model's (or the export's) default folder."""
    return Path(config.output_dir) if config.output_dir else default_output(model or str(config.exported_dir))


def default_output(model: str) -> Path:
    """A model's default validation folder: layerpick-out/<model>/validation."""
    return model_output_dir(model) / "validation"


def read_report(path: Path | None) -> SelectReport | None:
    """The select report whose metric curves validation correlates with the task scores (checked for shape)."""
    if path is None:
        return None
    report = read_select_report(path)
    report.check_scores(str(path))
    return report


def check_report(select: SelectReport | None, setup: Setup) -> None:
    """The select report against the model validated: the same layer count."""
    if select is not None and select.num_layers != setup.num_layers:
        raise LayerpickError(
            f"the report is for a model with {select.num_layers} layers; this one has {setup.num_layers}"
        )
