import json

import pytest

from layerpick.core.calibration import clean, load_calibration
from layerpick.errors import CalibrationError
from tests.testkit.paths import SHARED_DATA


def test_embedded_set_is_large_clean_and_deterministic():
    first = load_calibration()
    assert first.source == "embedded"
    assert len(first.texts) >= 300
    assert len(set(first.texts)) == len(first.texts)
    assert first.sha256 == load_calibration().sha256


def test_limit_is_a_seeded_sample():
    a = load_calibration(limit=50, seed=1)
    assert len(a.texts) == 50
    assert a.texts == load_calibration(limit=50, seed=1).texts
    assert a.texts != load_calibration(limit=50, seed=2).texts


def test_text_file_drops_blanks_and_duplicates(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("one\n\n  two  \none\nthree\n")
    assert load_calibration(path).texts == ["one", "two", "three"]


def test_jsonl_with_field(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps({"body": f"text {i}", "id": i}) for i in range(3)))
    assert load_calibration(path, field="body").texts == ["text 0", "text 1", "text 2"]
    with pytest.raises(CalibrationError, match="no text field 'text'.*body, id"):
        load_calibration(path)


def test_task_folder():
    texts = load_calibration(SHARED_DATA / "STSBenchmark", limit=20).texts
    assert len(texts) == 20 and all(isinstance(t, str) and t for t in texts)


@pytest.mark.parametrize(
    "content, message",
    [(b"", "contains no texts"), (b"\n \n", "contains no texts"), (b"ok\n\xff\xfe bad\n", "not valid UTF-8")],
)
def test_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(CalibrationError, match=message):
        load_calibration(path)


def test_missing_file_and_bad_limit(tmp_path):
    with pytest.raises(CalibrationError, match="not found"):
        load_calibration(tmp_path / "missing.txt")
    with pytest.raises(CalibrationError, match="--limit"):
        load_calibration(limit=0)


def test_bad_json_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"text": "a"}\n{oops\n')
    with pytest.raises(CalibrationError, match=":2: not valid JSON"):
        load_calibration(path)


def test_clean_keeps_first_occurrence_order():
    assert clean(["b", "a", "b", " ", "c"]) == ["b", "a", "c"]
