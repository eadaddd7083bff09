"""`--field`: one option for every JSONL text a command reads (calibration and fit texts), on every command that
reads them; a report carries the field its fit texts were read with, so `export --report` reads them again from
any working directory without being told (issue 33, cause 4). The faults (a field the texts lack, a field with a
text file) are rows of the fault matrix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from layerpick._util import interrupt
from layerpick.cli import app as cli_app
from layerpick.core.calibration import load_calibration
from layerpick.core.fit_texts import load_fit_texts
from layerpick.healing.texts import read_texts


def body_jsonl(folder: Path, count: int = 40) -> Path:
    path = folder / "docs.jsonl"
    rows = [
        {"id": i, "body": f"document {i} is about topic {i % 7} with words of its own {i * 13}"} for i in range(count)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    interrupt.reset()

    def run(*argv: str) -> tuple[int, str]:
        capsys.readouterr()
        code = cli_app.run([str(word) for word in argv])
        return code, capsys.readouterr().err

    yield run
    interrupt.reset()


def test_the_field_is_recorded_where_the_texts_were_read_from_it(tmp_path):
    source = body_jsonl(tmp_path)
    texts = load_calibration(source, field="body")
    assert texts.field == "body" and texts.describe()["field"] == "body"
    assert load_fit_texts(str(source), field="body").texts == read_texts(str(source), "body").texts
    assert "field" not in load_calibration(None).describe()  # the embedded set: no field


def test_select_reads_its_fit_texts_with_the_field_and_export_from_its_report_too(tiny_dirs, tmp_path, cli):
    """The fit texts default to the calibration texts, read with the same --field; `export --report`, run from
    another folder with no --field, reads them with the report's."""
    model, source = tiny_dirs("llama"), body_jsonl(tmp_path)
    line = ["select", model, "--calibration", source, "--field", "body", "--limit", "12", "--metrics", "dime"]
    code, err = cli(*line, "--transform", "center", "--output", tmp_path / "sel", "-q")
    assert code == 0, err
    report = json.loads((tmp_path / "sel" / "report.json").read_text())
    assert report["calibration"]["field"] == "body" and report["transform"]["fit"]["field"] == "body"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, err = cli("export", model, "--report", tmp_path / "sel" / "report.json", "--output", elsewhere / "x", "-q")
    assert code == 0, err
    metadata = json.loads((elsewhere / "x" / "layerpick.json").read_text())
    assert metadata["transform"]["fit"]["field"] == "body"
    assert metadata["transform"]["fit"]["sha256"] == report["transform"]["fit"]["sha256"]


def test_export_reads_jsonl_fit_texts_with_the_field(tiny_dirs, tmp_path, cli):
    model, source = tiny_dirs("llama"), body_jsonl(tmp_path)
    line = ["export", model, "--layer", "2", "--transform", "center", "--fit-texts", source, "--output", tmp_path / "x"]
    code, err = cli(*line, "--field", "body", "-q")
    assert code == 0, err
    metadata = json.loads((tmp_path / "x" / "layerpick.json").read_text())
    assert "--field body" in metadata["command"] and metadata["transform"]["fit"]["field"] == "body"
