"""run.json as `layerpick run` keeps it while it runs: the key and timing of every finished stage, rewritten after
each one (`Ledger`), and the one rule for a stage (`stage`): reuse its product when the ledger records the same key
and the product is there, else compute it. Later stages are invalidated by key, not by time."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from layerpick._util.atomic import write_json_atomic
from layerpick.workflow.record import RunRecord

Announce = Callable[[str, bool], None]


class Ledger:
    """run.json: the key and timing of every finished stage, rewritten after each stage."""

    def __init__(self, path: Path, force: bool) -> None:
        self.path = path
        self.previous = {} if force or not path.is_file() else dict(RunRecord.read(path).stages)
        self.stages: dict[str, dict[str, Any]] = {}

    def start(self) -> None:
        """Mark the folder as a layerpick run before any stage writes into it (earlier stages kept)."""
        self._save()

    def reusable(self, stage: str, key: str, product: Path) -> bool:
        return self.previous.get(stage, {}).get("key") == key and product.is_file()

    def record(self, stage: str, key: str, seconds: float, reused: bool) -> None:
        earlier = self.previous.get(stage, {}).get("seconds") if reused else None
        self.stages[stage] = {
            "key": key,
            "seconds": round(earlier if earlier is not None else seconds, 3),
            "reused": reused,
        }
        self._save()

    def forget(self, stage: str) -> None:
        self.previous.pop(stage, None)
        self.stages[stage]["key"] = None
        self._save()

    def _save(self) -> None:
        write_json_atomic(self.path, RunRecord({**self.previous, **self.stages}).to_json())


def stage(
    ledger: Ledger,
    stage: str,
    keys: dict[str, str],
    product: Path,
    announce: Announce,
    compute: Callable[[], Any],
    read: Callable[[Path], Any],
) -> Any:
    """Reuse a finished stage's product, or compute it; later stages are invalidated by key, not by time."""
    key = keys[stage]
    reused = ledger.reusable(stage, key, product)
    announce(stage, reused)
    started = time.perf_counter()
    data = read(product) if reused else compute()
    ledger.record(stage, key, time.perf_counter() - started, reused)
    return data
