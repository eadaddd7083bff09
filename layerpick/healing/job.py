"""Heal a cut: the model exported at layer K exactly as `layerpick export` makes it, trained on unlabelled texts to
reproduce its teacher's sentence vectors, written as an ordinary export with a `heal` section in its layerpick.json.

Owns the order of the steps and the checks around them: the request checked before anything loads (K, every
number's range, the texts' settings, the output), the training's outcome before anything is written
(`outcome`), the work folder that makes a run resumable (`workspace`), the fidelity before and
after on the held-out texts, and the healed export moved into place whole (export's atomic folder) only after it
reloads with sentence-transformers and gives the trained vectors.
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
import shutil
import time
from pathlib import Path
from typing import Any, Sequence

import torch

from layerpick._util.disk import check_free, tree_bytes
from layerpick._util.locks import output_lock
from layerpick._util.outputs import check_output_location
from layerpick._util.versions import library_versions
from layerpick.core.calibration import check_field
from layerpick.core.fingerprint import same_place, model_fingerprint, texts_fingerprint
from layerpick.core.devices import resolve_device
from layerpick.core.models import LoadOptions, peek_model_type, peek_num_layers
from layerpick.core.pooling import check_pooling
from layerpick.core.surgery import family_of_type
from layerpick.errors import LayerpickError, LayerRangeError
from layerpick.exporting import (
    onnx_flags,
    ExportConfig,
    annotate_export,
    atomic_directory,
    check_not_own_source,
    check_output,
    export_model,
)
from layerpick.exporting.metadata import ExportMetadata
from layerpick.healing import blocks as heal_blocks
from layerpick.healing import memory
from layerpick.healing import teacher as teachers
from layerpick.healing import texts as heal_texts
from layerpick.healing import workspace
from layerpick.healing.config import LOSSES, HealConfig, HealError
from layerpick.healing.fidelity import fidelity
from layerpick.healing.outcome import HealOutcomeError, check_fidelity
from layerpick.healing.result import HealReport
from layerpick.healing.train import default_prompt, train, uses_bf16

logger = logging.getLogger(__name__)

CUT_DIR = "cut"
RELOAD_TEXTS = 8  # held-out texts the written export must encode as the trained model did
RELOAD_TOLERANCE = 1e-4  # relative to the largest |value|
WEIGHTS_DIR = "weights"
# What makes one heal differ from another: a kept work folder resumes only under the same values, and the
# command that makes a heal again names those that differ from the defaults.
HEAL_SETTINGS = (
    "blocks",
    "fit_texts",
    "field",
    "pooling",
    "epochs",
    "learning_rate",
    "batch_size",
    "seed",
    "held_out",
    "max_texts",
    "loss",
)


def heal_model(
    model: str,
    layer: int | None,
    output: Path,
    config: HealConfig = HealConfig(),
    *,
    load_options: LoadOptions = LoadOptions(),
    callbacks: Sequence[Any] = (),
    teacher_home: Path | None = None,
) -> HealReport:
    """Cut `model` after layer K (`layer`, else `config.layer`), train the cut to reproduce its teacher
    (`heal.teacher`) on `config.fit_texts`, and write it at `output` as an export. `callbacks` are handed to the
    trainer (transformers `TrainerCallback`s). `teacher_home` keeps the teacher (a raw model's full-depth export)
    and its vectors for several heals of the same model and texts (a sweep's cuts); by default the heal's own work
    folder does."""
    output = Path(output)
    layer = config.layer if layer is None else layer
    check_request(model, layer, config, load_options)
    check_not_own_source(model, output)
    check_output(output, config.overwrite)
    check_output_location(output, "--output")
    with output_lock(output), workspace.workspace(output, run_key(model, layer, config, load_options)) as work:
        return _heal(model, layer, output, config, load_options, work, callbacks, teacher_home or work)


def cuttable_layer_count(model: str, load_options: LoadOptions) -> int | None:
    """The model's layer count, read from its config.json before any weights load; a model whose config names an
    architecture layerpick does not cut is refused here, as it would be once loaded. None where no config is at
    hand (a .gguf file, a hub id offline) or it states no count: checked once the model loads."""
    model_type = peek_model_type(model, load_options)
    if model_type is not None:
        family_of_type(model_type)
    return peek_num_layers(model, load_options)


def check_request(model: str, layer: int | None, config: HealConfig, load_options: LoadOptions) -> None:
    """Every check that needs no weights: K, the settings, and the texts where no tokenizer is needed to count them."""
    if layer is None:
        raise HealError("give the layer to cut after (--layer K)")
    num_layers = cuttable_layer_count(model, load_options)
    if layer < 1 or (num_layers is not None and layer >= num_layers):  # unknown L: checked once the model loads
        of = f" of this model's {num_layers}" if num_layers is not None else ""
        raise LayerRangeError(
            f"layer {layer} is out of range: a heal trains a cut that keeps K{of} blocks, 1 <= K < L "
            "(at K = L there is nothing to heal)"
        )
    if config.pooling is not None:
        check_pooling(config.pooling)
    if config.loss not in LOSSES:
        raise HealError(f"unknown loss {config.loss!r}; choose one of {', '.join(LOSSES)}")
    config.check_numbers()
    load_options.check()
    if load_options.dtype != "float32" or load_options.device_map:
        raise HealError("heal trains float32 weights on one device (bf16 autocast on a GPU): drop --dtype/--device-map")
    heal_blocks.check_syntax(config.blocks)
    if num_layers is not None and 1 <= layer < num_layers:
        heal_blocks.choose(config.blocks, layer, num_layers)
    sources = heal_texts.sources(config.fit_texts)
    places = [same_place(source) for source in sources]
    twice = next((place for place in places if places.count(place) > 1), None)
    if twice:
        raise HealError(f"--fit-texts names {twice} more than once")
    named = {f"--fit-texts ({i})": source for i, source in enumerate(sources, 1)} if len(sources) > 1 else {}
    check_field(config.field, named or {"--fit-texts": sources[0] if sources else None})
    whole = tuple(source for source in sources if not heal_texts.is_corpus_folder(source))
    if whole or not sources:  # an unreadable source is refused before loading
        texts = heal_texts.sample(heal_texts.read_all(whole or None, config.field), config.max_texts, config.seed)
        if len(whole) == len(sources):  # too few texts: refused before loading (a corpus is counted in passages)
            heal_texts.split(texts.texts, config.held_out, config.seed)


def run_key(model: str, layer: int, config: HealConfig, load_options: LoadOptions) -> dict[str, Any]:
    """The settings a kept work folder must match to be resumed, and the content of what it was made from: the
    model's (the fingerprint `run` keys its stages on) and each fit text source's (sha256), so that weights or texts
    changed in place at the same path start the work over rather than resume a cut, teacher vectors and
    checkpoints of the old ones."""
    sources = heal_texts.sources(config.fit_texts)
    return {
        "model": same_place(model),
        "layer": layer,
        **{name: getattr(config, name) for name in HEAL_SETTINGS},
        "fit_texts": [same_place(source) for source in sources],  # a list, as JSON
        "load": _same_device(load_options).cli_flags(),
        "model_content": model_fingerprint(model),
        "texts_content": [texts_fingerprint(source) for source in sources],
    }


def _same_device(load_options: LoadOptions) -> LoadOptions:
    """`load_options` with a device named that `auto` picks here written as `auto`, so both resume the same run."""
    try:
        same = resolve_device(load_options.device) == resolve_device("auto")
    except LayerpickError:
        return load_options
    return dataclasses.replace(load_options, device="auto") if same else load_options


def _heal(
    model: str,
    layer: int,
    output: Path,
    config: HealConfig,
    load_options: LoadOptions,
    work: Path,
    callbacks: Sequence[Any],
    teacher_home: Path,
) -> HealReport:
    started = time.monotonic()
    device = resolve_device(load_options.device)
    cut_dir, cut = build_cut(model, layer, work, config, load_options)
    if cut.layer >= cut.num_layers:
        raise LayerRangeError(f"layer {layer} is the last of {cut.num_layers}: at K = L there is nothing to heal")
    teacher = teachers.find_teacher(model, cut, teacher_home, load_options, config.progress)
    blocks = heal_blocks.choose(config.blocks, cut.layer, cut.num_layers)
    student = load_student(cut_dir, teacher, blocks, device)
    texts = heal_texts.prepare_texts(
        config.fit_texts,
        student.tokenizer,
        student.max_seq_length,
        held_out=config.held_out,
        max_texts=config.max_texts,
        seed=config.seed,
        field=config.field,
    )
    workspace.settle_texts(work, texts.texts.sha256)
    batch_size = min(config.batch_size, len(texts.train))
    need = memory.measure(student, texts.train, default_prompt(student), uses_bf16(device))
    memory.check(need, batch_size, device)
    vectors = teachers.teacher_vectors(
        teacher,
        texts.train + texts.held_out,
        teacher_home,
        device,
        config.progress,
        check_width=lambda width: _check_dimensions(student, width, teacher),
    )
    train_vectors, held_vectors = vectors[: len(texts.train)], vectors[len(texts.train) :]
    before = fidelity(teachers.encode(student, texts.held_out), held_vectors)
    outcome = train(student, texts.train, train_vectors, work, config, device, callbacks)
    healed = teachers.encode(student, texts.held_out)
    after = fidelity(healed, held_vectors)
    try:
        check_fidelity(before, after, config)
    except HealOutcomeError:  # resuming its checkpoints would give the same model
        workspace.reset_training(work)
        raise
    report = HealReport(
        output=str(output),
        model=model,
        layer=cut.layer,
        num_layers=cut.num_layers,
        teacher={**teacher.describe(int(vectors.shape[1])), "blocks": list(blocks)},
        texts=texts.describe(),
        training={
            **outcome.describe(config, device, round((time.monotonic() - started) / 60, 2)),
            "memory_floor_gb": round(need.floor(batch_size) / memory.GB, 2),
        },
        before=before,
        after=after,
        command=heal_command(model, layer, output, config, load_options),
        versions=library_versions(),
    )
    write_healed(cut_dir, student, output, report, config.overwrite, texts.held_out[:RELOAD_TEXTS])
    return report


def build_cut(
    model: str, layer: int, work: Path, config: HealConfig, load_options: LoadOptions
) -> tuple[Path, ExportMetadata]:
    """The cut at layer K, exported (and parity-checked) by `layerpick export` into the work folder, or the one an
    interrupted run left there."""
    folder = work / CUT_DIR
    if not (folder / "layerpick.json").is_file():
        export = ExportConfig(layer=layer, pooling=config.pooling, progress=config.progress, overwrite=True)
        export_model(model, layer, folder, export, load_options=load_options)
    return folder, ExportMetadata.read(folder / "layerpick.json")


def load_student(cut_dir: Path, teacher: teachers.Teacher, blocks: tuple[int, ...], device: str) -> Any:
    """The cut to train: as export made it, or with the teacher's `blocks` in its K places (`healing.blocks`)."""
    if heal_blocks.is_first(blocks):
        return teachers.load_encoder(str(cut_dir), device)
    source = teachers.load_encoder(teacher.path, "cpu")[0].auto_model
    heal_blocks.seat_config(cut_dir, source.config, blocks)
    student = teachers.load_encoder(str(cut_dir), device)
    heal_blocks.seat_weights(student[0].auto_model, source, blocks)
    return student


def _check_dimensions(student: Any, teacher_width: int, teacher: teachers.Teacher) -> None:
    dimension = getattr(student, "get_embedding_dimension", None) or student.get_sentence_embedding_dimension
    width = dimension()
    if width != teacher_width:
        raise HealError(
            f"the teacher ({teacher.description}) gives {teacher_width} dimensions and the cut {width}: a "
            "teacher whose pipeline changes the dimension (a Dense module) cannot be healed towards yet"
        )


def write_healed(
    cut: Path,
    student: Any,
    output: Path,
    report: HealReport,
    overwrite: bool,
    probe_texts: Sequence[str],
) -> None:
    """The cut's export folder with the trained weights and the heal section, moved into place at `output` once
    it reloads and encodes `probe_texts` as the trained model does (the same texts in one batch, so only the saving
    and the reloading can differ)."""
    needed = 2 * tree_bytes(cut) + (1 << 20)
    check_free(output.parent if output.parent.exists() else Path("."), needed)
    with atomic_directory(output, overwrite, needed) as stage:
        target = stage / "export"
        shutil.copytree(cut, target)
        save_weights(student, stage / WEIGHTS_DIR, target)
        annotate_export(target, heal=report.to_json())
        check_reload(target, probe_texts, teachers.encode(student, probe_texts), str(student.device))


def save_weights(student: Any, scratch: Path, target: Path) -> None:
    """Replace the export's transformer weights with the student's (saved by transformers, as export saves them)."""
    student[0].auto_model.save_pretrained(scratch, safe_serialization=True)
    for old in [*target.glob("*.safetensors"), *target.glob("*.safetensors.index.json")]:
        old.unlink()
    for new in [*scratch.glob("*.safetensors"), *scratch.glob("*.safetensors.index.json")]:
        shutil.copy2(new, target / new.name)


def check_reload(directory: Path, texts: Sequence[str], expected: torch.Tensor, device: str) -> None:
    encoded = teachers.encode(teachers.load_encoder(str(directory), device), texts)
    diff = (encoded - expected).abs().max().item()
    tolerance = RELOAD_TOLERANCE * max(1.0, expected.abs().max().item())
    if not diff <= tolerance:
        raise HealError(f"the healed export does not reload as trained (max abs diff {diff:.3g}); nothing was written")


def heal_command(model: str, layer: int, output: Path, config: HealConfig, load_options: LoadOptions) -> str:
    """The command line that makes this heal again."""
    words = ["layerpick", "heal", model, "--layer", str(layer), "--output", str(output)]
    default = HealConfig()
    for source in heal_texts.sources(config.fit_texts):
        words += ["--fit-texts", source]
    for name in HEAL_SETTINGS:
        value = getattr(config, name)
        if name != "fit_texts" and value != getattr(default, name):
            words += [f"--{name.replace('_', '-')}", str(value)]
    return shlex.join(words + onnx_flags(config.format, config.quantize) + load_options.cli_flags())
