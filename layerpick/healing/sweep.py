"""Choosing K without labels for a trained embedder: several cuts healed on the same texts, each measured by its
held-out fidelity to the teacher, and the shallowest one whose fidelity clears a line written at the output.

Owns the rule (`choose`: the smallest K whose held-out mean cosine to the teacher is within `max_loss` of the
teacher's own 1.0, as `--max-loss` on task scores is within that much of the best), its default and the evidence
for it, the order (the cuts healed shallowest first, stopping at the first that clears the line: the deeper ones
are said in the log and recorded as not healed, and a later run with a stricter line heals them), and the sweep's
work folder (`.NAME.heal-sweep` beside the output: one healed export per K, reused by a
later run with the same settings and the same model and texts (their content, not their paths), so that another
`--max-loss` costs no training, and the teacher's vectors of the texts, computed once for every K; removed once the
chosen cut is in place, kept when no cut clears the line or the run stops).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shlex
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from layerpick._util.disk import tree_bytes
from layerpick._util.locks import output_lock
from layerpick._util.outputs import check_output_location
from layerpick.core.layer_list import parse_layer_list
from layerpick.core.models import LoadOptions
from layerpick.errors import LayerRangeError
from layerpick.exporting import (
    add_onnx,
    annotate_export,
    check_graph_request,
    atomic_directory,
    check_not_own_source,
    check_output,
)
from layerpick.exporting.metadata import ExportMetadata
from layerpick.healing import blocks as heal_blocks
from layerpick.healing.config import HealConfig
from layerpick.healing.job import HealError, check_request, cuttable_layer_count, heal_model, run_key
from layerpick.healing.result import HealReport
from layerpick.healing.workspace import as_json, changed_settings, worth_keeping

logger = logging.getLogger(__name__)

# benchmarks/results/heal.md: minilm-l6 healed 10 epochs on SciFact's passages at K = 2, 3, 4 reached a held-out
# cosine of 0.822, 0.841 and 0.858 and kept 88%, 90% and 93% of the full model's SciFact nDCG@10 (the plain cut at
# K = 3: 0.198 and 12%). The line through them reaches the 95% near 0.875-0.88: a loss of 0.12 from the
# teacher's 1.0. From spread blocks (2 epochs on 900 passages) the same line holds: 0.767 -> 86%, 0.837 -> 93%,
# 0.897 -> 99%, 0.927 -> 98%; and 0.910 -> 97% after 3 epochs on 4,000 passages (same page). One model and
# one task: a default to revisit.
DEFAULT_MAX_LOSS = 0.12
SETTINGS_FILE = "sweep.json"


@dataclass(frozen=True)
class HealSweep:
    """Cuts healed at `layers` on the same texts (`heals`, ascending K) and the one chosen (`chosen`, written at
    `output`) by the shallowest held-out cosine within `max_loss` of 1.0; `not_healed`, the deeper layers asked for
    that were not healed because a shallower cut cleared the line first."""

    output: str
    max_loss: float
    chosen: int
    heals: tuple[HealReport, ...]
    not_healed: tuple[int, ...] = ()

    @property
    def layers(self) -> list[int]:
        """Every layer the sweep was asked for, healed or not."""
        return sorted({*(heal.layer for heal in self.heals), *self.not_healed})

    @property
    def threshold(self) -> float:
        return 1.0 - self.max_loss

    @property
    def report(self) -> HealReport:
        """The chosen cut's heal."""
        return next(heal for heal in self.heals if heal.layer == self.chosen)

    def to_json(self) -> dict[str, Any]:
        """The `sweep` entry of the chosen export's heal section: the rule and every K's fidelity."""
        return {
            "rule": describe_rule(self.max_loss),
            "max_loss": self.max_loss,
            "chosen": self.chosen,
            "layers": [
                {"layer": h.layer, "before": dataclasses.asdict(h.before), "after": dataclasses.asdict(h.after)}
                for h in self.heals
            ],
            "not_healed": list(self.not_healed),  # deeper than the first cut that cleared the line
        }

    def heal_section(self) -> dict[str, Any]:
        """The chosen export's heal section: its heal, with the sweep's output, command and every K's fidelity."""
        command = sweep_command(self.report.command, self.layers, Path(self.output), self.max_loss)
        return {**self.report.to_json(), "output": self.output, "command": command, "sweep": self.to_json()}


def describe_rule(max_loss: float) -> str:
    return f"the shallowest healed cut whose held-out cosine to the teacher is at least {1.0 - max_loss:g}"


def parse_layers(text: str | Sequence[int], num_layers: int | None, option: str = "--layers") -> list[int]:
    """`--layers` (named `option` in errors): comma-separated K (e.g. 2,3,4) or `all` (1..L-1), each 1 <= K < L."""
    if not isinstance(text, str):
        text = ",".join(str(int(k)) for k in text)
    words = {"all": lambda: range(1, num_layers)} if num_layers else {}
    grammar = "comma-separated layers to heal, e.g. 2,3,4, or all"
    try:
        layers = parse_layer_list(text, first=1, words=words, grammar=grammar, error=HealError)
    except (HealError, LayerRangeError) as error:
        raise type(error)(str(error).replace("--layers", option)) from None
    if num_layers is not None and max(layers) >= num_layers:
        raise LayerRangeError(
            f"layer {max(layers)} is out of range for {option}: a heal keeps 1..{num_layers - 1} of this model's "
            f"{num_layers} blocks (at K = L there is nothing to heal)"
        )
    return layers


def choose(heals: Sequence[HealReport], max_loss: float) -> int | None:
    """The smallest K whose held-out cosine to the teacher is at least 1 - max_loss; None if none is."""
    cleared = [heal.layer for heal in heals if heal.after.cosine >= 1.0 - max_loss - 1e-12]
    return min(cleared, default=None)


def check_max_loss(max_loss: float, option: str = "--max-loss") -> float:
    if not 0.0 <= max_loss < 1.0:
        raise HealError(f"{option} for a heal is a loss of cosine fidelity, 0 <= X < 1 (got {max_loss:g})")
    return float(max_loss)


def check_sweep(
    model: str,
    layers: str | Sequence[int],
    max_loss: float | None,
    load_options: LoadOptions,
    prefix: str = "",
    blocks: str = heal_blocks.DEFAULT,
) -> None:
    """A sweep's layers (against the model's count), line and blocks, checked without loading any weights;
    `prefix` names the options in errors as the command has them (run's `--heal-layers`, `--heal-max-loss`)."""
    parse_layers(layers, cuttable_layer_count(model, load_options), option=f"--{prefix}layers")
    check_max_loss(DEFAULT_MAX_LOSS if max_loss is None else max_loss, option=f"--{prefix}max-loss")
    check_sweep_blocks(blocks, option=f"--{prefix}blocks")


def check_sweep_blocks(blocks: str, option: str = "--blocks") -> None:
    """A sweep heals several K, so its blocks are a rule (spread, first), not one cut's list."""
    if blocks not in heal_blocks.WORDS:
        raise HealError(f"{option} {blocks}: a sweep takes spread or first (a list names the blocks of one cut)")


def heal_or_sweep(
    model: str,
    layer: int | None,
    output: Path,
    config: HealConfig = HealConfig(),
    *,
    load_options: LoadOptions = LoadOptions(),
    callbacks: Sequence[Any] = (),
) -> HealReport | HealSweep:
    """`layerpick heal`: the cut at `layer` (else `config.layer`) healed, or with `config.layers` the sweep."""
    layer = config.layer if layer is None else layer
    if config.format == "static":
        raise HealError(
            "a heal writes a sentence-transformers export (with --format onnx, its graph too); distil "
            "the healed export with `layerpick export HEALED --format static`"
        )
    with_graph = check_graph_request(config.format, config.quantize)
    if config.layers is None:
        if config.max_loss is not None:
            raise HealError("--max-loss is the line a sweep's cuts must clear: add --layers (e.g. --layers 2,3,4)")
        result = heal_model(model, layer, output, config, load_options=load_options, callbacks=callbacks)
    elif layer is not None:
        raise HealError("--layer heals one cut and --layers chooses among several: give one of them")
    else:
        result = heal_layers(
            model,
            config.layers,
            output,
            config,
            max_loss=config.max_loss,
            load_options=load_options,
            callbacks=callbacks,
        )
    if with_graph:  # the healed export compounds with ONNX Runtime: its graph traced from the trained weights
        add_onnx(Path(output), config.quantize)
    return result


def heal_layers(
    model: str,
    layers: str | Sequence[int],
    output: Path,
    config: HealConfig = HealConfig(),
    *,
    max_loss: float | None = None,
    load_options: LoadOptions = LoadOptions(),
    callbacks: Sequence[Any] = (),
) -> HealSweep:
    """Heal `model` cut at each of `layers` on `config`'s texts (the same held-out split for every K) and write
    the shallowest cut whose held-out cosine clears 1 - `max_loss` at `output` (`sweep` in its heal section)."""
    output = Path(output)
    max_loss = check_max_loss(DEFAULT_MAX_LOSS if max_loss is None else max_loss)
    layers = parse_layers(layers, cuttable_layer_count(model, load_options))
    check_sweep_blocks(config.blocks)
    check_request(model, layers[0], config, load_options)
    check_not_own_source(model, output)
    check_output(output, config.overwrite)
    check_output_location(output, "--output")
    with (
        output_lock(output),
        sweep_folder(output, sweep_key(model, config, load_options)) as folder,
        said_once(logging.getLogger("layerpick.healing.texts")),
    ):
        heals = _heal_until_clear(model, layers, folder, config, load_options, callbacks, max_loss)
        chosen = choose(heals, max_loss)
        if chosen is None:
            raise NoCutClears(heals, max_loss, folder)
        sweep = HealSweep(str(output), max_loss, chosen, heals, tuple(layers[len(heals) :]))
        _publish(folder / layer_folder(chosen), output, sweep, config.overwrite)
    return sweep


def _heal_until_clear(
    model: str,
    layers: Sequence[int],
    folder: Path,
    config: HealConfig,
    load_options: LoadOptions,
    callbacks: Sequence[Any],
    max_loss: float,
) -> tuple[HealReport, ...]:
    """The heals of `layers`, shallowest first, up to the first whose held-out cosine clears the line: a deeper cut
    would not be chosen, so it is not trained (said in the log; a stricter line later heals it)."""
    heals: list[HealReport] = []
    for index, layer in enumerate(layers):
        heals.append(_heal_one(model, layer, folder, config, load_options, callbacks, index, len(layers)))
        if choose(heals[-1:], max_loss) is not None:
            rest = layers[index + 1 :]
            if rest:
                logger.warning(
                    "K = %d clears the line (held-out cosine %.4f >= %g): the deeper cut%s %s %s not healed",
                    layer,
                    heals[-1].after.cosine,
                    1.0 - max_loss,
                    "s" if len(rest) > 1 else "",
                    ", ".join(map(str, rest)),
                    "are" if len(rest) > 1 else "is",
                )
            break
    return tuple(heals)


class NoCutClears(HealError):
    """No healed cut reached the fidelity line: the heals are kept for another --max-loss."""

    def __init__(self, heals: Sequence[HealReport], max_loss: float, folder: Path):
        best = max(heals, key=lambda heal: heal.after.cosine)
        super().__init__(
            f"no healed cut reached a held-out cosine of {1.0 - max_loss:g} (the best: K = {best.layer} at "
            f"{best.after.cosine:.4f}); the healed cuts are kept in {folder}: the same command with a larger "
            "--max-loss or more --layers reuses them (other texts or settings heal again)"
        )


@contextmanager
def said_once(said_by: logging.Logger) -> Iterator[None]:
    """Each heal of a sweep reads the same texts: their warnings (too few, too long) are shown for the first only."""
    seen: set[str] = set()

    def first_time(record: logging.LogRecord) -> bool:
        message = record.getMessage()
        new = message not in seen
        seen.add(message)
        return new

    said_by.addFilter(first_time)
    try:
        yield
    finally:
        said_by.removeFilter(first_time)


def layer_folder(layer: int) -> str:
    return f"layer-{layer}"


def sweep_key(model: str, config: HealConfig, load_options: LoadOptions) -> dict[str, Any]:
    """The settings the kept heals must share to be reused (not the layers or the line: those may change)."""
    key = run_key(model, 0, config, load_options)
    key.pop("layer")
    return key


@contextmanager
def sweep_folder(output: Path, key: dict[str, Any]) -> Iterator[Path]:
    """`.NAME.heal-sweep` beside `output`: reused with the same settings, started over with others, kept while
    some heal or the teacher's vectors are in it and the run did not finish (an interrupt, no cut clearing the
    line), removed on success."""
    folder = output.parent / f".{output.name}.heal-sweep"
    settings = folder / SETTINGS_FILE
    before = _read(settings) if folder.is_dir() else None
    if folder.is_dir() and before != as_json(key):
        logger.warning(
            "a heal sweep with other settings (%s) left %s: starting over", changed_settings(before, key), folder
        )
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(key, indent=2, default=str) + "\n", encoding="utf-8")
    try:
        yield folder
    except BaseException as error:
        kept = any(folder.glob("layer-*")) or any(folder.glob(".layer-*.heal")) or worth_keeping(folder, error)
        if not kept:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _heal_one(
    model: str,
    layer: int,
    folder: Path,
    config: HealConfig,
    load_options: LoadOptions,
    callbacks: Sequence[Any],
    index: int,
    count: int,
) -> HealReport:
    """The heal of K kept in the sweep folder, or a new one written there."""
    target = folder / layer_folder(layer)
    kept = _kept_heal(target)
    if kept is not None:
        logger.warning("layer %d of the sweep: reusing the heal kept in %s", layer, target)
        return kept
    logger.warning("healing the cut at layer %d (%d of %d)", layer, index + 1, count)
    one = dataclasses.replace(config, overwrite=True)
    return heal_model(model, layer, target, one, load_options=load_options, callbacks=callbacks, teacher_home=folder)


def _kept_heal(target: Path) -> HealReport | None:
    try:
        metadata = ExportMetadata.read(target / "layerpick.json")
    except Exception:  # noqa: BLE001 - no kept heal, or one cut short: heal again
        return None
    return HealReport.from_json(metadata.heal) if metadata.is_healed else None


def _publish(healed: Path, output: Path, sweep: HealSweep, overwrite: bool) -> None:
    """The chosen healed export, its heal section carrying the sweep, moved into place whole."""
    with atomic_directory(output, overwrite, tree_bytes(healed) + (1 << 20)) as stage:
        target = stage / "export"
        shutil.copytree(healed, target)
        annotate_export(target, heal=sweep.heal_section())


def sweep_command(one_heal: str, layers: Sequence[int], output: Path, max_loss: float) -> str:
    """The command line that makes the sweep again, from one of its heals' (`--layer K --output K's folder`)."""
    words = shlex.split(one_heal)
    for option, value in (("--layer", ",".join(map(str, layers))), ("--output", str(output))):
        at = words.index(option)
        words[at + 1] = value
    words[words.index("--layer")] = "--layers"
    return shlex.join(words + ["--max-loss", f"{max_loss:g}"])
