"""Compare several models: select reports (and validation results) overlaid on relative depth k/L.

Inputs are select `report.json` files, `validate` `validation.json` files (told apart by their keys, not their
names), or folders holding them: `report.json` or `select/report.json`, and `validation.json`,
`validation/validation.json` or `validate/validation.json` (the layouts of `layerpick-out/<model>/` and of a
`layerpick run` folder), else the same in its immediate subfolders (so `layerpick-out` compares every model
there). A select report and a validation found for the same folder are one model: its metric curves and
its mean task score by layer. Each model is labelled by its name (and `@revision` when the report has one);
duplicate labels get the folder name, then a number.

Output (one folder, written atomically: everything is rendered into a temporary folder beside it first, then
renamed into place):
`compare.json` (every curve and the table), `compare.md` (the table), `metric-<name>.png` (the metric against
relative depth, one line per model, a star at the selected layer) and `mean-task-score.png` (when any model is
validated). An existing non-empty output is replaced only with `overwrite`, and only when it holds nothing but
a previous compare output.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from layerpick.errors import LayerpickError
from layerpick.metrics import list_metrics
from layerpick.versions import library_versions

REPORT_NAME = "report.json"
VALIDATION_NAME = "validation.json"
# Where a model folder keeps its files: `layerpick select`/`validate` defaults (layerpick-out/<model>/report.json,
# layerpick-out/<model>/validation/validation.json) and `layerpick run` (DIR/select/, DIR/validate/).
LAYOUT = ("report.json", "select/report.json", "validation.json", "validation/validation.json",
          "validate/validation.json")
SUBFOLDERS = {"select": REPORT_NAME, "validation": VALIDATION_NAME, "validate": VALIDATION_NAME}
SELECT_KEYS = ("model", "num_layers", "rule", "selected_layer", "scores")
VALIDATION_KEYS = ("model", "num_layers", "tasks", "mean_by_layer")
JSON_NAME = "compare.json"
MARKDOWN_NAME = "compare.md"
MEAN_PLOT = "mean-task-score.png"
_OUTPUT_FILE = re.compile(r"^(compare\.json|compare\.md|mean-task-score\.png|metric-[A-Za-z0-9._-]+\.png)$")


class CompareError(LayerpickError):
    """Inputs that cannot be compared (or an output that cannot be written)."""


class ReportNotFoundError(CompareError):
    """A report file or folder that does not exist, or a folder holding no report."""


class NotAReportError(CompareError):
    """A file that is not a layerpick select report or validation.json."""


class OutputExistsError(CompareError):
    """An output folder that already holds files."""


@dataclass(frozen=True)
class Source:
    """One file read: `kind` is "select" (a report.json) or "validation" (a validation.json)."""

    path: Path
    kind: str
    data: dict[str, Any]


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


@dataclass(frozen=True)
class Comparison:
    """What `compare_reports` found (`data` is compare.json), the output folder and the files written."""

    data: dict[str, Any]
    entries: tuple[Entry, ...]
    output: Path
    files: tuple[Path, ...]


def compare_reports(inputs: Sequence[str | Path], output: str | Path, *, overwrite: bool = False) -> Comparison:
    """Load `inputs`, build the comparison and write it into `output` (see the module docstring)."""
    output = Path(output)
    entries = load_entries(inputs)
    check_output(output, overwrite)
    data = build_comparison(entries, inputs)
    files = write_comparison(data, output, overwrite=overwrite)
    return Comparison(data, tuple(entries), output, tuple(files))


# ---------------------------------------------------------------------------------------------- reading


def load_entries(inputs: Sequence[str | Path]) -> list[Entry]:
    """Every model in `inputs` (files or folders), a select report paired with the validation of its folder."""
    if not inputs:
        raise CompareError("give at least one report (a report.json, a validation.json or a folder holding them)")
    sources: dict[Path, Source] = {}
    for item in inputs:
        for path in _expand(Path(item)):
            key = path.resolve()
            if key not in sources:
                sources[key] = read_source(path)
    groups: dict[Path, list[Source]] = {}
    for source in sources.values():
        groups.setdefault(_folder_of(source), []).append(source)
    entries = [entry for folder, group in groups.items() for entry in _pair(folder, group)]
    _label(entries)
    return entries


def read_source(path: Path) -> Source:
    """A select report.json or a validation.json, checked for the keys and shapes the comparison reads."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportNotFoundError(f"report not found: {path}") from None
    except IsADirectoryError:
        raise ReportNotFoundError(f"no report in {path}") from None
    except UnicodeDecodeError:
        raise NotAReportError(f"{path} is not a layerpick report: not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotAReportError(f"{path} is not a layerpick report: not valid JSON ({error.msg}, line {error.lineno})") \
            from None
    if not isinstance(data, dict):
        raise NotAReportError(f"{path} is not a layerpick report: expected a JSON object, found {type(data).__name__}")
    kind = _kind(path, data)
    data = dict(data)
    num_layers = data["num_layers"]
    if not _is_int(num_layers) or num_layers < 1:
        raise NotAReportError(f"{path}: num_layers must be a positive integer (got {num_layers!r})")
    if kind == "select":
        data["selected_layer"] = _layer(path, data, "selected_layer", required=True)
        if not isinstance(data["scores"], dict):
            raise NotAReportError(f"{path}: scores must be an object of metric name -> values by layer")
        data["scores"] = {str(name): _curve(path, f"scores[{name!r}]", values, num_layers)
                          for name, values in data["scores"].items() if values is not None}
    else:
        data["mean_by_layer"] = _curve(path, "mean_by_layer", data["mean_by_layer"], num_layers)
        if not isinstance(data["tasks"], dict):
            raise NotAReportError(f"{path}: tasks must be an object of task name -> results")
        for name in ("selected_layer", "best_layer"):
            data[name] = _layer(path, data, name, required=False)
    return Source(path, kind, data)


def _kind(path: Path, data: dict) -> str:
    if all(key in data for key in VALIDATION_KEYS):
        return "validation"
    missing_select = [key for key in SELECT_KEYS if key not in data]
    if not missing_select:
        return "select"
    missing_validation = [key for key in VALIDATION_KEYS if key not in data]
    if any(key in data for key in ("tasks", "mean_by_layer")):
        what, missing = "a validation.json", missing_validation
    elif any(key in data for key in ("rule", "scores")):
        what, missing = "a select report.json", missing_select
    else:
        raise NotAReportError(f"{path} is not a layerpick report: missing {', '.join(missing_select)} (a select "
                              f"report.json) or {', '.join(missing_validation)} (a validation.json)")
    raise NotAReportError(f"{path} is not a layerpick report: missing {', '.join(missing)} (keys of {what})")


def _layer(path: Path, data: dict, key: str, *, required: bool) -> int | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not _is_int(value) or not 0 <= value <= data["num_layers"]:
        raise NotAReportError(f"{path}: {key} must be a layer in 0..{data['num_layers']} (got {value!r})")
    return int(value)


def _curve(path: Path, name: str, values: Any, num_layers: int) -> list[float | None]:
    """A list of L+1 numbers or nulls; NaN and infinities become None."""
    if not isinstance(values, list) or len(values) != num_layers + 1:
        found = f"{len(values)} values" if isinstance(values, list) else type(values).__name__
        raise NotAReportError(f"{path}: {name} must hold {num_layers + 1} values, one per layer (found {found})")
    if not all(v is None or _is_number(v) for v in values):
        raise NotAReportError(f"{path}: {name} must hold numbers or nulls")
    return [float(v) if _finite(v) else None for v in values]


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
        raise CompareError(f"cannot tell which report goes with which validation in {folder} ({names}); "
                           "pass the files of one model per folder")
    if len(selects) > 1 or len(validations) > 1:
        return [Entry("", folder, source.path.stem, **{source.kind: source}) for source in group]
    entry = Entry("", folder, folder.name, selects[0] if selects else None, validations[0] if validations else None)
    if entry.select is not None and entry.validation is not None:
        _check_pair(entry)
    return [entry]


def _check_pair(entry: Entry) -> None:
    select, validation = entry.select.data, entry.validation.data  # type: ignore[union-attr]
    if select["num_layers"] != validation["num_layers"]:
        raise CompareError(f"{entry.select.path} ({select['num_layers']} layers) and {entry.validation.path} "
                           f"({validation['num_layers']} layers) are not from the same model")
    if str(select["model"]) != str(validation["model"]):
        entry.notes.append(f"the select report is for {select['model']!r}, the validation for "
                           f"{validation['model']!r}")
    ran_with = validation.get("selected_layer")
    if ran_with is not None and ran_with != select["selected_layer"]:
        entry.notes.append(f"the validation ran with a report choosing layer {ran_with}; this comparison uses "
                           f"{entry.select.path.name}'s layer {select['selected_layer']}")


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


# ---------------------------------------------------------------------------------------------- numbers


def build_comparison(entries: Sequence[Entry], inputs: Iterable[str | Path] = ()) -> dict[str, Any]:
    """compare.json: the table, every model's curves by layer and relative depth, metric directions."""
    directions = _directions(entries)
    return {
        "inputs": [str(item) for item in inputs],
        "table": [table_row(e) for e in entries],
        "models": [_model_data(e) for e in entries],
        "metrics": directions,
        "plots": [plot_name(name) for name in directions] + ([MEAN_PLOT] if _validated(entries) else []),
        "versions": library_versions(),
    }


def table_row(entry: Entry) -> dict[str, Any]:
    """The chosen layer and its relative depth; with a validation, the mean task score there and the gains."""
    num, selected = entry.num_layers, entry.selected_layer
    row: dict[str, Any] = {
        "label": entry.label, "model": entry.model, "revision": entry.revision, "num_layers": num,
        "rule": entry.rule, "selected_layer": selected, "selected_depth": _depth(selected, num),
        "validated": entry.validation is not None,
        "selected_score": None, "last_layer": num, "last_score": None, "best_layer": None, "best_depth": None,
        "best_score": None, "gain_over_last": None, "gap_to_best": None,
    }
    means = entry.mean_by_layer
    if means is None:
        return row
    best = best_layer(means)
    chosen, last = _at(means, selected), _at(means, num)
    row.update(selected_score=chosen, last_score=last, best_layer=best, best_depth=_depth(best, num),
               best_score=_at(means, best), gain_over_last=_difference(chosen, last),
               gap_to_best=_difference(chosen, _at(means, best)))
    return row


def best_layer(means: Sequence[float | None]) -> int | None:
    """The layer of the highest mean task score (the smallest such layer on ties); None when none is scored."""
    scored = [(value, -k) for k, value in enumerate(means) if _finite(value)]
    return -max(scored)[1] if scored else None


def _model_data(entry: Entry) -> dict[str, Any]:
    num = entry.num_layers
    main = entry.main.data
    return {
        "label": entry.label, "model": entry.model, "revision": entry.revision, "num_layers": num,
        "report": str(entry.select.path) if entry.select else None,
        "validation": str(entry.validation.path) if entry.validation else None,
        "rule": entry.rule, "selected_layer": entry.selected_layer,
        "representation": main.get("representation"), "pooling": main.get("pooling"),
        "depth": [k / num for k in range(num + 1)],
        "scores": entry.scores,
        "mean_by_layer": entry.mean_by_layer,
        "tasks": sorted(entry.validation.data["tasks"]) if entry.validation else None,
        "notes": list(entry.notes),
    }


def _directions(entries: Sequence[Entry]) -> dict[str, str | None]:
    """Every metric of any report, in registry order then as found, with its documented direction."""
    known = {spec.name: spec.direction for spec in list_metrics()}
    found: dict[str, str | None] = {}
    for entry in entries:
        given = entry.select.data.get("directions") or {} if entry.select else {}
        for name in entry.scores:
            if found.get(name) is None:
                found[name] = given.get(name) if given.get(name) in ("min", "max") else known.get(name)
    order = [name for name in known if name in found] + [name for name in found if name not in known]
    return {name: found[name] for name in order}


def plot_name(metric: str) -> str:
    return "metric-" + re.sub(r"[^A-Za-z0-9._-]", "_", metric) + ".png"


def _validated(entries: Sequence[Entry]) -> bool:
    return any(e.validation is not None for e in entries)


def _depth(layer: int | None, num: int) -> float | None:
    return None if layer is None else layer / num


def _at(values: Sequence[float | None], k: int | None) -> float | None:
    return values[k] if k is not None and 0 <= k < len(values) else None


def _difference(a: float | None, b: float | None) -> float | None:
    return a - b if _finite(a) and _finite(b) else None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


# ---------------------------------------------------------------------------------------------- rendering


def to_markdown(data: dict[str, Any]) -> str:
    """compare.md: the table of chosen layers and gains, the plots, and where each model came from."""
    rows = data["table"]
    lines = [
        "# layerpick compare",
        "",
        f"{len(rows)} model(s). Depth = layer / L (the fraction of blocks kept). Scores are the mean main score "
        "over the validated tasks (validation.json); gain = selected minus last layer; – where not validated.",
        "",
        "| model | L | rule | selected | depth | score (selected) | score (last) | best layer | depth (best) "
        "| score (best) | gain vs last |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        cells = [_md(row["label"]), str(row["num_layers"]), _md(row["rule"] or "–"), _int(row["selected_layer"]),
                 _fixed(row["selected_depth"], 2), _fixed(row["selected_score"], 4), _fixed(row["last_score"], 4),
                 _int(row["best_layer"]), _fixed(row["best_depth"], 2), _fixed(row["best_score"], 4),
                 _signed(row["gain_over_last"])]
        lines.append("| " + " | ".join(cells) + " |")
    if data["plots"]:
        lines += ["", "## Plots", ""]
        lines += [f"![{name[:-4]}]({name})" for name in data["plots"]]
    lines += ["", "## Inputs", ""]
    for model in data["models"]:
        parts = [f"report `{model['report']}`" if model["report"] else "",
                 f"validation `{model['validation']}`" if model["validation"] else ""]
        lines.append(f"- {_md(model['label'])}: " + ", ".join(p for p in parts if p))
        lines += [f"  - note: {_md(note)}" for note in model["notes"]]
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|")


def _int(value: int | None) -> str:
    return "–" if value is None else str(value)


def _fixed(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.4f}"


def plot_metric(data: dict[str, Any], metric: str, path: Path) -> Path:
    """One metric against relative depth: a line per model that has it, a star at its selected layer."""
    direction = data["metrics"].get(metric)
    title = f"{metric}: {direction} is better (per paper)" if direction else metric
    curves = [(m, m["scores"][metric]) for m in data["models"] if metric in m["scores"]]
    return _plot(data, curves, title, metric, path)


def plot_mean_score(data: dict[str, Any], path: Path) -> Path:
    """The mean task score against relative depth: a line per validated model, a star at its selected layer."""
    curves = [(m, m["mean_by_layer"]) for m in data["models"] if m["mean_by_layer"] is not None]
    return _plot(data, curves, "mean task score by relative depth", "mean main score", path, best=True)


def _plot(data: dict[str, Any], curves, title: str, ylabel: str, path: Path, best: bool = False) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    palette = matplotlib.colormaps["tab10" if len(data["models"]) <= 10 else "tab20"]
    colors = {m["label"]: palette(i % palette.N) for i, m in enumerate(data["models"])}
    figure, axis = plt.subplots(figsize=(8, 5))
    for model, values in curves:
        color, depth = colors[model["label"]], model["depth"]
        points = [(depth[k], v) for k, v in enumerate(values) if v is not None]
        if points:
            axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, linewidth=1.5,
                      color=color, label=f"{model['label']} (L={model['num_layers']})")
        if best:
            _mark(axis, best_layer(values), values, depth, color, "D", 13, filled=False)
        _mark(axis, model["selected_layer"], values, depth, color, "*", 14)
    axis.set_xlabel("relative depth k/L")
    axis.set_ylabel(ylabel)
    axis.set_xlim(-0.03, 1.03)
    axis.set_title(title)
    axis.grid(alpha=0.3)
    if curves:
        axis.legend(fontsize=8, loc="best",
                    title="★ selected layer" + (", ◇ best layer" if best else ""), title_fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _mark(axis, layer: int | None, values, depth, color, marker: str, size: float, filled: bool = True) -> None:
    """A marker at (k/L, value at k); a dotted vertical line where the curve has no value at k."""
    if layer is None:
        return
    value = values[layer]
    if value is None:
        axis.axvline(depth[layer], color=color, linestyle=":", linewidth=1.2)
        return
    axis.plot([depth[layer]], [value], marker=marker, markersize=size, color=color, linestyle="none",
              markerfacecolor=color if filled else "none", markeredgecolor="black" if filled else color, zorder=3)


# ---------------------------------------------------------------------------------------------- writing


def check_output(output: Path, overwrite: bool) -> None:
    """Refuse a non-empty output without `overwrite`, and with it anything but a previous compare output."""
    output = Path(output)
    if not output.exists() and not output.is_symlink():
        return
    if output.is_symlink():
        raise OutputExistsError(f"output {output} is a symbolic link; give the directory itself")
    if not output.is_dir():
        raise OutputExistsError(f"output {output} exists and is not a directory")
    present = sorted(p.name for p in output.iterdir())
    if not present:
        return
    if not overwrite:
        raise OutputExistsError(f"output {output} is not empty; pass --overwrite to replace it")
    foreign = [name for name in present if not _OUTPUT_FILE.match(name) or not (output / name).is_file()]
    if foreign:
        raise OutputExistsError(f"output {output} holds files that are not a compare output ({', '.join(foreign[:3])}"
                                f"{', ...' if len(foreign) > 3 else ''}); refusing to replace it")


def write_comparison(data: dict[str, Any], output: Path, *, overwrite: bool = False) -> list[Path]:
    """Render every file into a temporary folder beside `output`, then move it into place in one rename."""
    output = Path(output)
    check_output(output, overwrite)
    target = output.resolve()  # "." has no name and would be its own parent
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        (staging / JSON_NAME).write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        (staging / MARKDOWN_NAME).write_text(to_markdown(data), encoding="utf-8")
        for metric in data["metrics"]:
            plot_metric(data, metric, staging / plot_name(metric))
        if MEAN_PLOT in data["plots"]:
            plot_mean_score(data, staging / MEAN_PLOT)
        _replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [output / name for name in (JSON_NAME, MARKDOWN_NAME, *data["plots"])]


def _replace(staging: Path, output: Path) -> None:
    """Move the rendered files into place: a new output is the staging folder renamed; an existing one (empty or a
    checked previous compare output, kept as a folder so a shell inside it stays valid) gets each file by an
    atomic rename, and its compare files that this comparison does not have are removed after."""
    if not output.exists():
        os.rename(staging, output)
        return
    fresh = {path.name for path in staging.iterdir()}
    for name in sorted(fresh, key=lambda n: n == JSON_NAME):  # compare.json last: it lists the others
        os.replace(staging / name, output / name)
    for stale in output.iterdir():
        if stale.name not in fresh and _OUTPUT_FILE.match(stale.name) and stale.is_file():
            stale.unlink()
