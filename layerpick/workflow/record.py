"""`layerpick run`'s ledger file, run.json ("layerpick-run/1"), as `RunRecord`.

Each stage's entry is {"key": the hash of everything it depends on (None when it must run again), "seconds":
how long it took when it ran, "reused": whether this run reused it}; `workflow/run.py`'s `Ledger` decides with
them which stages to reuse and rewrites the file after each stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from layerpick._util.documents import Document
from layerpick.errors import ReportFormatError


@dataclass(frozen=True)
class RunRecord(Document):
    """Every finished stage of a run folder: its key and timing."""

    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    FORMAT: ClassVar[str] = "layerpick-run/1"
    WHAT: ClassVar[str] = "a layerpick run.json"
    NOUN: ClassVar[str] = "run record"
    REQUIRED: ClassVar[tuple[str, ...]] = ("stages",)

    @classmethod
    def _decode(cls, values: dict[str, Any], extra: dict[str, Any], where: str) -> RunRecord:
        stages = values["stages"]
        if not isinstance(stages, dict) or not all(isinstance(entry, dict) for entry in stages.values()):
            raise ReportFormatError(f"{where}: stages must be an object of stage name -> {{key, seconds, reused}}")
        return cls(stages, extra)
