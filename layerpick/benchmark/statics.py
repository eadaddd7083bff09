"""Static exports timed beside the cuts of one model: `layerpick bench SOURCE --layers 2,4 --static DIR ...`.

Owns: checking each `--static` directory before anything loads (a static export of layerpick, distilled from
a model with as many layers as the one benched), its size on disk, and its rows. The run itself is the cuts'
run (`layerpick.benchmark.cuts`): each static table is loaded beside the full model and the cuts and timed on the
same batches, interleaved, at every batch size, with its peak memory in a fresh process like theirs; its ratios
are static / full, as a cut's are cut / full.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from layerpick.benchmark.baseline import baseline_source, is_static_export
from layerpick.benchmark.config import BenchError

PREFIX = "static:"  # a static peer's key among the cuts' (ints) and the full model's


@dataclass(frozen=True)
class StaticPeer:
    """A static export to time: its key in the run, where it is, the layer it was distilled from, its size."""

    key: str
    path: Path
    layer: int
    source: str | None
    size_bytes: int


@dataclass(frozen=True)
class StaticRow:
    """One static export at one batch size; ratios are static / full (a speed-up above 1 is faster)."""

    name: str
    path: str
    layer: int
    batch_size: int
    texts_per_s: float
    full_texts_per_s: float
    measured_speedup: float
    latency_median_ms: float
    full_latency_median_ms: float
    peak_memory_bytes: int | None
    memory_ratio: float | None
    size_bytes: int


def check_statics(paths: Sequence[str | Path], num_layers: int) -> tuple[StaticPeer, ...]:
    """Each `--static` directory as a peer, or a one-line error naming it."""
    from layerpick.exporting.metadata import read_metadata

    peers: list[StaticPeer] = []
    for given in paths:
        path = Path(given).expanduser()
        metadata = read_metadata(path) if (path / "modules.json").is_file() else None
        if not is_static_export(metadata):
            raise BenchError(
                f"--static {given} is not a layerpick static export (make one with layerpick export "
                "MODEL --layer K --format static)"
            )
        if metadata.num_layers != num_layers:
            raise BenchError(
                f"--static {given} was distilled from a model with {metadata.num_layers} layers; "
                f"the model benched has {num_layers}"
            )
        key = f"{PREFIX}{path.name}"
        if any(peer.key == key for peer in peers):
            key = f"{PREFIX}{path}"
        peers.append(StaticPeer(key, path, int(metadata.layer), baseline_source(metadata), size_on_disk(path)))
    return tuple(peers)


def size_on_disk(path: Path) -> int:
    """The bytes of every file in the directory (the table, its tokenizer and configs)."""
    return sum(item.stat().st_size for item in Path(path).rglob("*") if item.is_file())


def static_rows(
    peers: Sequence[StaticPeer], timings: dict, memory: dict | None, batch_sizes: Sequence[int], full_key: Any
) -> list[StaticRow]:
    """A row per static export and batch size, against the full model (`full_key` in `timings` and `memory`)."""
    rows = []
    for peer in peers:
        for size in batch_sizes:
            ours, full = timings[size][peer.key], timings[size][full_key]
            peak = memory[peer.key][size]["peak_memory_bytes"] if memory else None
            full_peak = memory[full_key][size]["peak_memory_bytes"] if memory else None
            rows.append(
                StaticRow(
                    name=peer.path.name,
                    path=str(peer.path),
                    layer=peer.layer,
                    batch_size=size,
                    texts_per_s=ours.texts_per_s,
                    full_texts_per_s=full.texts_per_s,
                    measured_speedup=ours.texts_per_s / full.texts_per_s,
                    latency_median_ms=ours.latency_median_ms,
                    full_latency_median_ms=full.latency_median_ms,
                    peak_memory_bytes=peak,
                    memory_ratio=peak / full_peak if peak is not None and full_peak else None,
                    size_bytes=peer.size_bytes,
                )
            )
    return rows


def notes(peers: Sequence[StaticPeer]) -> list[str]:
    """What each static export is, for the run's notes."""
    return [
        f"static {peer.path.name}: a model2vec table distilled from layer {peer.layer} of {peer.source or '?'}; "
        "no transformer runs (size on disk: every file of its directory)"
        for peer in peers
    ]
