"""The models of `layerpick compare`: finding the report files its inputs name, pairing them, labelling them.

Owns: the folder layouts an input may have (`report.json` or `select/report.json`, and `validation.json`,
`validation/validation.json` or `validate/validation.json`, else the same in its immediate subfolders), the
pairing of a select report and a validation of one model folder into an `Entry`, and each entry's label: its
name (and `@revision` when the report has one), with the folder name, then a number, when labels repeat.
Reading one file is `layerpick.comparison.read`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from layerpick._util.filenames import REPORT_FILE, VALIDATION_FILE
from layerpick.comparison.read import (
    CompareError,
    ReportNotFoundError,
    Source,
    read_source,
)

REPORT_NAME = REPORT_FILE
VALIDATION_NAME = VALIDATION_FILE
# Where a model folder keeps its files: `layerpick select`/`validate` defaults (layerpick-out/<model>/report.json,
# layerpick-out/<model>/validation/validation.json) and `layerpick run` (DIR/select/, DIR/validate/).
LAYOUT = (
    REPORT_FILE,
    f"select/{REPORT_FILE}",
    VALIDATION_FILE,
    f"validation/{VALIDATION_FILE}",
    f"validate/{VALIDATION_FILE}",
)
SUBFOLDERS = {"select": REPORT_NAME, "validation": VALIDATION_NAME, "validate": VALIDATION_NAME}


@dataclass
class Entry:
    """One model of the comparison: its select report, its validation, or both."""

    label: str
    folder: Path
    tag: str = ""  # what tells apart two entries of the same name: the folder's name, or the file's
    select: Source | None = None
    validation: Source | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def main(self) -> Source:
        return self.select or self.validation  # type: ignore[return-value]

    @property
    def model(self) -> str:
        return str(self.main.data["model"])

    @property
    def revision(self) -> str | None:
        for source in (self.select, self.validation):
            if source is not None and source.data.get("revision"):
                return str(source.data["revision"])
        return None

    @property
    def num_layers(self) -> int:
        return int(self.main.data["num_layers"])

    @property
    def selected_layer(self) -> int | None:
        if self.select is not None:
            return int(self.select.data["selected_layer"])
        return self.validation.data.get("selected_layer")  # type: ignore[union-attr]

    @property
    def rule(self) -> str | None:
        if self.select is not None:
            return str(self.select.data["rule"])
        origin = self.validation.data.get("select_report") or {}  # type: ignore[union-attr]
        return origin.get("rule") if isinstance(origin, dict) else None

    @property
    def scores(self) -> dict[str, list[float | None]]:
        return self.select.data["scores"] if self.select is not None else {}

    @property
    def mean_by_layer(self) -> list[float | None] | None:
        return self.validation.data["mean_by_layer"] if self.validation is not None else None


def load_entries(inputs: Sequence[str | Path]) -> list[Entry]:
    """Every model in `inputs` (files or folders), a select report paired with the validation of its folder."""
    if not inputs:
        raise CompareError("give at least one report (a report.json, a validation.json or a folder holding them)")
    groups: dict[Path, list[Source]] = {}
    for source in _read_all(inputs):
        groups.setdefault(_folder_of(source), []).append(source)
    entries = [entry for folder, group in groups.items() for entry in _pair(folder, group)]
    _label(entries)
    return entries


def _read_all(inputs: Sequence[str | Path]) -> list[Source]:
    """Every report file the inputs name, in the order given, each file read once."""
    sources: dict[Path, Source] = {}
    for item in inputs:
        for path in _expand(Path(item)):
            key = path.resolve()
            if key not in sources:
                sources[key] = read_source(path)
    return list(sources.values())


def _expand(path: Path) -> list[Path]:
    """The report files an input names: the file itself, or what a folder (or its subfolders) holds."""
    if path.is_dir():
        found = _reports_in(path)
        if not found:
            found = [file for sub in sorted(p for p in path.iterdir() if p.is_dir()) for file in _reports_in(sub)]
        if not found:
            raise ReportNotFoundError(f"no report in {path}: expected {', '.join(LAYOUT)} in it or in a subfolder")
        return found
    if not path.exists():
        raise ReportNotFoundError(f"report not found: {path}")
    return [path]


def _reports_in(folder: Path) -> list[Path]:
    return [folder / name for name in LAYOUT if (folder / name).is_file()]


def _folder_of(source: Source) -> Path:
    """The model folder a file belongs to: its own, or `<dir>` for `<dir>/select/report.json`,
    `<dir>/validation/validation.json` and `<dir>/validate/validation.json` (unless that subfolder holds the
    other kind of file too)."""
    parent = source.path.resolve().parent
    other = {REPORT_NAME: VALIDATION_NAME, VALIDATION_NAME: REPORT_NAME}
    expected = SUBFOLDERS.get(parent.name)
    kind_name = REPORT_NAME if source.kind == "select" else VALIDATION_NAME
    if expected == kind_name and not (parent / other[kind_name]).is_file():
        return parent.parent
    return parent


def _pair(folder: Path, group: list[Source]) -> list[Entry]:
    selects = [s for s in group if s.kind == "select"]
    validations = [s for s in group if s.kind == "validation"]
    if len(selects) > 1 and validations or len(validations) > 1 and selects:
        names = ", ".join(str(s.path) for s in group)
        raise CompareError(
            f"cannot tell which report goes with which validation in {folder} ({names}); "
            "pass the files of one model per folder"
        )
    if len(selects) > 1 or len(validations) > 1:
        return [Entry("", folder, source.path.stem, **{source.kind: source}) for source in group]
    entry = Entry("", folder, folder.name, selects[0] if selects else None, validations[0] if validations else None)
    if entry.select is not None and entry.validation is not None:
        _check_pair(entry)
    return [entry]


def _check_pair(entry: Entry) -> None:
    select, validation = entry.select.data, entry.validation.data  # type: ignore[union-attr]
    if select["num_layers"] != validation["num_layers"]:
        raise CompareError(
            f"{entry.select.path} ({select['num_layers']} layers) and {entry.validation.path} "
            f"({validation['num_layers']} layers) are not from the same model"
        )
    if str(select["model"]) != str(validation["model"]):
        entry.notes.append(f"the select report is for {select['model']!r}, the validation for {validation['model']!r}")
    ran_with = validation.get("selected_layer")
    if ran_with is not None and ran_with != select["selected_layer"]:
        entry.notes.append(
            f"the validation ran with a report choosing layer {ran_with}; this comparison uses "
            f"{entry.select.path.name}'s layer {select['selected_layer']}"
        )


def _label(entries: list[Entry]) -> None:
    """name[@revision]; duplicates get their folder (or file) name, then a number, so every label is unique."""
    bases = [short_name(e.model) + (f"@{e.revision}" if e.revision else "") for e in entries]
    labels = [base if bases.count(base) == 1 else f"{base} ({e.tag})" for base, e in zip(bases, entries)]
    taken: set[str] = set()
    for entry, label in zip(entries, labels):
        candidate, number = label, 0
        while candidate in taken or (number == 0 and labels.count(label) > 1):
            number += 1
            candidate = f"{label} #{number}"
        entry.label = candidate
        taken.add(candidate)


def short_name(model: str) -> str:
    """A hub id or alias as given; a local path by its last part."""
    text = model.rstrip("/\\")
    if text.startswith(("/", "./", "../", "~", ".\\", "..\\")) or re.match(r"^[A-Za-z]:[\\/]", text):
        return Path(text).name or text
    return text
