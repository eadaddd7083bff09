"""The JSON files the stages write, as documents: one frozen dataclass per file, a `format` version key.

`Document` is the mixin every such dataclass takes (`SelectReport`, `ValidationReport`, `ExportMetadata`,
`BenchResult`, `CutsResult`, `ComparisonReport`, `RunRecord`): `to_json` writes the format key first and the
fields in their declared order, `from_json` checks the format, the kind and the required keys once for every
reader, and `read` does both for a file, with one-line errors (`ReportFormatError`) for a missing, unreadable,
malformed or foreign file. Keys a reader does not know are kept in the document's `extra` field and written back,
so a file from a newer minor version survives a round trip.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from layerpick.errors import ReportFormatError

D = TypeVar("D", bound="Document")


class Document:
    """A frozen dataclass that is one file's JSON; subclasses set FORMAT, WHAT and (optionally) REQUIRED."""

    FORMAT: ClassVar[str]  # "layerpick-<kind>/<version>"
    WHAT: ClassVar[str]  # how an error names it: "a layerpick select report"
    NOUN: ClassVar[str] = "file"  # how a "not found" error names it: "report not found: PATH"
    REQUIRED: ClassVar[tuple[str, ...]] = ()  # keys every reader needs, in the order an error names them
    OPTIONAL: ClassVar[tuple[str, ...]] = ()  # fields left out of the file while they are None

    def to_json(self) -> dict[str, Any]:
        """The file's JSON object: the format key, then every field (nested dataclasses as objects)."""
        data = {"format": self.FORMAT}
        for item in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, item.name)
            if item.name == "extra" or (item.name in self.OPTIONAL and value is None):
                continue
            data[item.name] = _plain(value)
        return {**data, **getattr(self, "extra", {})}

    @classmethod
    def from_json(cls: type[D], data: Any, where: str | None = None) -> D:
        """The document from its JSON object; a one-line `ReportFormatError` naming `where` when it is not one."""
        where = where or cls.WHAT
        check_format(data, cls.FORMAT, cls.WHAT, where)
        missing = [key for key in cls.REQUIRED if key not in data]
        if missing:
            raise ReportFormatError(f"{where} is not {cls.WHAT}: missing {', '.join(missing)}")
        known = {item.name for item in dataclasses.fields(cls)} - {"extra"}  # type: ignore[arg-type]
        values = {key: value for key, value in data.items() if key in known}
        extra = {key: value for key, value in data.items() if key not in known and key != "format"}
        try:
            return cls._decode(values, extra, where)
        except (TypeError, KeyError, ValueError, AttributeError) as error:
            raise ReportFormatError(f"{where} is not {cls.WHAT}: {_reason(error)}") from None

    @classmethod
    def _decode(cls: type[D], values: dict[str, Any], extra: dict[str, Any], where: str) -> D:
        """Build the dataclass (subclasses rebuild nested dataclasses and check shapes here)."""
        names = {item.name for item in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**values, **({"extra": extra} if "extra" in names else {}))

    @classmethod
    def read(cls: type[D], path: str | Path) -> D:
        """The document in the file at `path`, checked."""
        return cls.from_json(read_json_file(Path(path), cls.NOUN), str(path))


def check_format(data: Any, expected: str, what: str, where: str) -> None:
    """One line when `data` is not a JSON object of format `expected` ("layerpick-<kind>/<version>")."""
    if not isinstance(data, dict):
        raise ReportFormatError(f"{where} is not {what} (expected a JSON object)")
    found = data.get("format")
    if found == expected:
        return
    if not isinstance(found, str):
        raise ReportFormatError(f'{where} is not {what}: it has no "format": "{expected}" key')
    kind, _, version = found.partition("/")
    want_kind, _, want_version = expected.partition("/")
    if kind != want_kind:
        raise ReportFormatError(f"{where} is a {kind} file, not {what} ({want_kind})")
    raise ReportFormatError(
        f"{where} is {what} of format version {version}; this layerpick reads version {want_version}"
    )


def read_json_file(path: Path, noun: str = "file") -> Any:
    """A JSON file's content; one-line errors for a missing, unreadable or invalid file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportFormatError(f"{noun} not found: {path}") from None
    except IsADirectoryError:
        raise ReportFormatError(f"{noun} not found: {path} is a folder") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ReportFormatError(f"cannot read {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise ReportFormatError(f"{path} is not valid JSON ({error.msg}, line {error.lineno})") from None


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
