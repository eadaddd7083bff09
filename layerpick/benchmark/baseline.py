"""The full model `layerpick bench` compares an export against, built so that only the transformer differs.

Owns: finding the full model (from `layerpick.json` or `--baseline`: a registry alias, a directory, a .gguf
file or a hub id), locating a directory's transformer weights, and building the baseline directory: a copy
of the exported directory with the full model's config and weights linked in, so it has the export's
tokenizer, pooling, normalisation and max_seq_length and all L layers. A static export has no transformer to
swap: its baseline is the full model exported at its last layer with the pooling, normalisation and
max_seq_length the static table was distilled with (`build_static_baseline_dir`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from layerpick._util.filenames import METADATA_FILE
from layerpick.benchmark.config import BenchError
from layerpick.exporting.metadata import ExportMetadata

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def baseline_name(exported: Path, requested: str | None, metadata: ExportMetadata | None) -> str:
    """`--baseline` when given, else the source named in the export's layerpick.json; a one-line error when
    there is neither."""
    name = requested or baseline_source(metadata)
    if name is None:
        raise BenchError(f"{exported} has no layerpick.json naming its source model: pass --baseline MODEL")
    return name


def baseline_source(metadata: ExportMetadata | None) -> str | None:
    """The full model an export came from, as written in its layerpick.json (a local path when it exists)."""
    if metadata is None:
        return None
    source = metadata.baseline  # followed through exports of exports
    path, name = source.get("path"), source.get("model")
    if isinstance(path, str) and path and Path(path).is_dir():
        return path
    return name if isinstance(name, str) and name else None


def full_model_dir(name: str) -> Path:
    """A local directory holding the full model's config.json and weights, for an alias, a directory
    (a plain transformers one or a sentence-transformers one), a .gguf file or a hub id."""
    from layerpick.core import registry
    from layerpick.core.gguf_cache import converted_gguf_dir

    if registry.get_entry(name) is not None:
        _, source = registry.resolve_alias(name)
        return converted_gguf_dir(source.directory, source.gguf_file) if source.gguf_file else source.directory
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return converted_gguf_dir(path.parent, path.name)
    if path.is_dir():
        return transformer_dir(path)
    if path.is_absolute() or name.startswith((".", "~")) or name.count("/") != 1:
        raise BenchError(f"baseline model not found: {name} (pass a registry alias, a directory or a hub id)")
    return _download(name)


def _download(repo_id: str) -> Path:
    from huggingface_hub import snapshot_download

    from layerpick.core import registry
    from layerpick.core.hub import resolve_hub_id

    source = resolve_hub_id(repo_id, aliases=tuple(registry.ENTRIES))  # fails fast offline, no retries
    try:
        return Path(
            snapshot_download(
                repo_id, allow_patterns=["config.json", "*.safetensors", "*.json"], local_files_only=source.local_only
            )
        )
    except Exception as error:  # noqa: BLE001 - hub errors come in many types; one line for the user
        raise BenchError(f"cannot fetch baseline {repo_id}: {str(error).splitlines()[0]}") from error


def transformer_dir(directory: Path) -> Path:
    """Where the transformer's config.json and weights live: the directory itself, or for a
    sentence-transformers directory the path of its first module."""
    modules = directory / "modules.json"
    if modules.is_file():
        entries = json.loads(modules.read_text(encoding="utf-8"))
        first = min(entries, key=lambda entry: int(entry.get("idx", 0)))
        directory = directory / first.get("path", "")
    if not (directory / "config.json").is_file():
        raise BenchError(f"no config.json in {directory}: not a transformers model directory")
    return directory


def weight_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)


def weights_bytes(directory: Path) -> int:
    """The size on disk of a model directory's transformer weight files (`transformer_dir`, `weight_files`)."""
    return sum(path.stat().st_size for path in weight_files(transformer_dir(directory)))


def build_baseline_dir(exported: Path, full: Path, work: Path) -> Path:
    """A copy of the exported directory whose transformer has the full model's config and weights
    (weights linked, not copied): same tokenizer, pooling and normalisation, all L layers, and without the
    export's post-pooling transform (a Dense module), which the full model as a user has it does not run."""
    target = work / "baseline"
    module = transformer_dir(exported).relative_to(exported)
    shutil.copytree(exported, target, ignore=shutil.ignore_patterns("onnx"))  # torch runs the full model
    _drop_dense(target)
    module_dir = target / module
    for stale in weight_files(module_dir) + [module_dir / name for name in WEIGHT_INDEXES]:
        stale.unlink(missing_ok=True)
    shutil.copyfile(full / "config.json", module_dir / "config.json")
    _link_weights(full, module_dir)
    (target / METADATA_FILE).unlink(missing_ok=True)
    return target


def is_static_export(metadata: ExportMetadata | None) -> bool:
    """Whether an export's layerpick.json describes a static table (`layerpick export --format static`)."""
    return metadata is not None and metadata.is_static


def build_static_baseline_dir(name: str, metadata: ExportMetadata, work: Path, progress: bool = False) -> Path:
    """The full model `name` a static export was distilled from, as layerpick exports it at its last layer (its
    own tokenizer, all L layers) with the pooling, normalisation and max_seq_length of the static export's cut."""
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting import export_model

    layers = metadata.num_layers
    if not isinstance(layers, int) or layers < 1:
        raise BenchError(f"the static export's {METADATA_FILE} names no layer count for its full model")
    target = work / "baseline"
    export_model(
        name,
        layers,
        target,
        ExportConfig(
            pooling=metadata.pooling,
            normalize=metadata.normalize,
            max_seq_length=metadata.max_seq_length,
            progress=progress,
        ),
    )
    (target / METADATA_FILE).unlink(missing_ok=True)
    return target


def _drop_dense(directory: Path) -> None:
    modules_file = directory / "modules.json"
    modules = json.loads(modules_file.read_text(encoding="utf-8"))
    dense = [m for m in modules if str(m.get("type", "")).endswith("Dense")]
    for entry in dense:
        shutil.rmtree(directory / entry["path"], ignore_errors=True)
    if dense:
        kept = [m for m in modules if m not in dense]
        modules_file.write_text(json.dumps(kept, indent=2) + "\n", encoding="utf-8")


def _link_weights(full: Path, module_dir: Path) -> None:
    weights = weight_files(full)
    if not weights:
        raise BenchError(f"no weight files in {full}")
    for weight in weights:
        (module_dir / weight.name).symlink_to(weight.resolve())
    for index in WEIGHT_INDEXES:
        if (full / index).is_file():
            shutil.copyfile(full / index, module_dir / index)
