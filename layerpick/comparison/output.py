"""The output folder of `layerpick compare`: its file names, whether it may be written, and writing it atomically.

Owns: the names of the files a comparison writes, the check before writing (an existing non-empty output is
replaced only with `overwrite`, and only when it holds nothing but a previous compare output), and `staged_output`:
everything is rendered into a temporary folder beside the output first, then moved into place, so a failure
leaves the output as it was.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from layerpick._util.atomic import commit_files, publish, staging_directory, swap_into_place
from layerpick._util.outputs import check_replaceable

JSON_NAME = "compare.json"
MARKDOWN_NAME = "compare.md"
MEAN_PLOT = "mean-task-score.png"
_OUTPUT_FILE = re.compile(r"^(compare\.json|compare\.md|mean-task-score\.png|metric-[A-Za-z0-9._-]+\.png)$")


def plot_name(metric: str) -> str:
    return "metric-" + re.sub(r"[^A-Za-z0-9._-]", "_", metric) + ".png"


def check_output(output: Path, overwrite: bool) -> None:
    """Refuse a non-empty output without `overwrite`, and with it anything but a previous compare output."""
    check_replaceable(output, overwrite=overwrite, owned=_holds_only_compare_files, what="comparison")


def _holds_only_compare_files(folder: Path) -> bool:
    return all(_OUTPUT_FILE.match(path.name) and path.is_file() for path in folder.iterdir())


@contextmanager
def staged_output(output: Path, overwrite: bool) -> Iterator[Path]:
    """Yield an empty folder beside `output` to render into; when the block succeeds, its files replace
    `output`'s. The staging folder is removed either way."""
    check_output(output, overwrite)
    target = Path(output).resolve()  # "." has no name and would be its own parent
    with staging_directory(target) as staging:
        yield staging
        _replace(staging, target)


def _replace(staging: Path, output: Path) -> None:
    """Move the rendered files into place: a new output is the staging folder renamed; an existing one (empty or a
    checked previous compare output, kept as a folder so a shell inside it stays valid) gets each file by an
    atomic rename, and its compare files that this comparison does not have are removed after."""
    if not output.exists():
        publish(staging)
        swap_into_place(staging, output, previous=staging.with_name(staging.name + "-previous"))  # none to keep
        return
    fresh = {path.name for path in staging.iterdir()}
    commit_files(staging, output, sorted(fresh, key=lambda n: n == JSON_NAME))  # compare.json last: it lists the others
    for stale in output.iterdir():
        if stale.name not in fresh and _OUTPUT_FILE.match(stale.name) and stale.is_file():
            stale.unlink()
