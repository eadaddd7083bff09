"""Several static exports of one model in one run: `layerpick export MODEL --format static --layers 2,6,12`.

Owns: the `--layers` request of an export (its syntax, as bench's `--layers` reads comma-separated layers; its
range, from the model's config.json before any weights load where that file is at hand, else right after the
load, before anything is written), the output layout (OUTPUT/layer-K, one static export per layer, and
OUTPUT/layers.json listing them), and the one load they share.

Each layer is exported by the single export's own steps (`export.job.cut_and_save`) on a copy of the loaded
full model, so OUTPUT/layer-K is what `layerpick export MODEL --layer K --format static --output OUTPUT/layer-K`
writes (its layerpick.json records that command). The model is loaded once; each layer's copy (a second full
model in memory at the peak) is cut, proven and distilled, then dropped. The whole OUTPUT is built in one staging
folder beside it and moved into place when every layer is done: a failure or an interrupt leaves nothing, and an
existing OUTPUT is replaced (with `overwrite`) only once the new one is whole.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from layerpick._util import atomic
from layerpick._util.locks import output_lock
from layerpick._util.outputs import check_output_location, check_replaceable
from layerpick.core.layer_list import check_layer_range, parse_layer_list
from layerpick.core.models import LoadedModel, LoadOptions, load_model, peek_num_layers
from layerpick.exporting import job, static_checks
from layerpick.exporting import request as export_request
from layerpick.exporting.errors import ExportError
from layerpick.exporting.config import ExportConfig

INDEX_FILE = "layers.json"


@dataclass(frozen=True)
class StaticLayersResult:
    """One static export per layer, under `output` (OUTPUT/layer-K)."""

    output: Path
    exports: tuple[job.ExportResult, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "output": str(self.output),
            "layers": [each.layer for each in self.exports],
            "exports": [each.to_json() for each in self.exports],
        }


def layer_name(k: int) -> str:
    """The folder of layer K's static export inside OUTPUT."""
    return f"layer-{k}"


def parse_layers(text: str) -> list[int]:
    """Comma-separated layers (as bench's `--layers`), sorted, repeats dropped; each at least 1 (an export keeps
    the first K blocks). The upper bound needs the model (`check_range`)."""
    return parse_layer_list(text, first=1, grammar="comma-separated layers, e.g. 2,6,12", error=ExportError)


def check_range(layers: Sequence[int], num_layers: int | None) -> None:
    """A one-line error for the first layer above the model's count (nothing to check when it is unknown)."""
    check_layer_range(layers, 1, num_layers)


def check_request(
    model: str,
    layers: str | Sequence[int],
    output: Path,
    config: ExportConfig,
    load_options: LoadOptions = LoadOptions(),
) -> tuple[list[int], export_request.ExportRequest]:
    """Every check that needs no weights: `--layers` with `--format static` only, not with `--report`, each
    layer in range, each export as `--layer K` would check it, and the output."""
    if config.format != static_checks.FORMAT:
        raise ExportError(
            "--layers writes one static export per layer: add --format static (or export one layer with --layer K)"
        )
    if config.report is not None:
        raise ExportError("--layers names the layers to distil: drop --report (or export its layer alone)")
    chosen = parse_layers(",".join(map(str, layers)) if not isinstance(layers, str) else layers)
    request = export_request.check_request(model, chosen[0], config, load_options)
    check_range(chosen, peek_num_layers(model, load_options))
    export_request.check_not_own_source(model, output)
    check_output(output, config.overwrite)
    check_output_location(output, "--output")
    return chosen, request


def check_output(output: Path, overwrite: bool) -> None:
    """Refuse an existing output unless it is empty or (with `overwrite`) an earlier multi-layer static export."""
    check_replaceable(
        output, overwrite=overwrite, owned=lambda path: (path / INDEX_FILE).is_file(), what="multi-layer static export"
    )


def export_static_layers(
    model: str,
    layers: str | Sequence[int],
    output: Path,
    config: ExportConfig = ExportConfig(format=static_checks.FORMAT),
    *,
    load_options: LoadOptions = LoadOptions(),
) -> StaticLayersResult:
    """Load `model` once and write, under `output`, the static export of every layer in `layers` (OUTPUT/layer-K,
    each what a single `--layer K --format static` export gives), all or nothing."""
    output = Path(output)
    chosen, request = check_request(model, layers, output, config, load_options)
    with output_lock(output):
        loaded = load_model(model, load_options)
        check_range(chosen, loaded.num_layers)
        with _staged(output, config.overwrite) as built:
            results = tuple(_export_layer(request, loaded, k, output, built) for k in chosen)
            (built / INDEX_FILE).write_text(json.dumps(index(model, results), indent=2) + "\n", encoding="utf-8")
    return StaticLayersResult(output, results)


def _export_layer(
    request: export_request.ExportRequest, loaded: LoadedModel, k: int, output: Path, built: Path
) -> job.ExportResult:
    """Layer K's static export, from a copy of the full model (the export cuts and prunes what it is given)."""
    plan = dataclasses.replace(request.plan, layer=k)
    return job.cut_and_save(
        dataclasses.replace(request, plan=plan),
        output / layer_name(k),
        loaded=_copy(loaded),
        build_at=built / layer_name(k),
    )


def _copy(loaded: LoadedModel) -> LoadedModel:
    return dataclasses.replace(
        loaded, model=copy.deepcopy(loaded.model), tokenizer=copy.deepcopy(loaded.tokenizer), notes=list(loaded.notes)
    )


def index(model: str, results: Sequence[job.ExportResult]) -> dict[str, Any]:
    """layers.json: which folder holds which layer, and each table's size and cosine to its cut."""
    return {
        "model": model,
        "format": static_checks.FORMAT,
        "layers": [each.layer for each in results],
        "exports": {
            str(each.layer): {
                "directory": layer_name(each.layer),
                "pca_dims": each.static["pca_dims"],
                "bytes": each.static["bytes"],
                "mean_cosine_to_cut": each.static["parity"]["mean_cosine"],
                "min_cosine_to_cut": each.static["parity"]["min_cosine"],
            }
            for each in results
        },
    }


@contextmanager
def _staged(output: Path, overwrite: bool) -> Iterator[Path]:
    """A folder to fill beside `output`; when the block succeeds it replaces `output` in one rename (an older
    `output` is removed only after), else it and everything in it are removed."""
    with atomic.staging_directory(output) as work:
        built = work / "result"
        built.mkdir()
        yield built
        atomic.publish(built)
        check_output(output, overwrite)
        atomic.swap_into_place(built, output, work / "previous")
