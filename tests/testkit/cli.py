"""Running the installed `layerpick` command and checking its one-line errors."""

import sys
from pathlib import Path

LAYERPICK = str(Path(sys.executable).parent / "layerpick")


def assert_one_line_error(result, message):
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().startswith("layerpick: error:")
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
