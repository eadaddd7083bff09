import json
import os

import pytest

from layerpick.core import calibration
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


def test_a_text_that_is_not_a_string_says_what_it_is(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"text": 3}\n')
    with pytest.raises(CalibrationError) as error:
        load_calibration(path)
    assert str(error.value) == f"{path}: line 1: field 'text' is a number, not a string"
    path.write_text('{"text": "a"}\n\n{"text": null}\n')
    with pytest.raises(CalibrationError, match="line 3: field 'text' is null, not a string"):
        load_calibration(path)


def test_fit_texts_read_jsonl_as_the_calibration_does(tmp_path):
    from layerpick.core.fit_texts import load_fit_texts

    path = tmp_path / "fit.jsonl"
    path.write_text('{"text": ["a", "b"]}\n')
    with pytest.raises(CalibrationError) as error:
        load_fit_texts(str(path))
    assert str(error.value) == f"--fit-texts: {path}: line 1: field 'text' is a list, not a string"


def _pipe(data: bytes) -> str:
    """A pipe, named as a shell names `<(cmd)`: /dev/fd/N, its writer feeding it from a thread."""
    import threading

    read, write = os.pipe()

    def feed():
        with os.fdopen(write, "wb") as handle:
            handle.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return f"/dev/fd/{read}"


def test_a_pipe_is_read_once_and_every_later_load_sees_the_same_texts():
    """`--calibration <(cmd)`: one command loads the texts several times (the fit set, a run's input hash)."""
    lines = "".join(f"piped text {i}\n" for i in range(12)).encode()
    name = _pipe(lines)
    first = load_calibration(name)
    assert first.texts == [f"piped text {i}" for i in range(12)] and first.source == name
    sample = load_calibration(name, limit=5, seed=1).texts
    assert len(sample) == 5 and set(sample) <= set(first.texts)
    again = load_calibration(name)
    assert again.texts == first.texts and again.sha256 == first.sha256
    os.close(int(name.rsplit("/", 1)[1]))


def test_a_fifo_with_field_is_read_as_jsonl(tmp_path):
    import threading

    fifo = tmp_path / "texts"
    os.mkfifo(fifo)
    rows = "".join(json.dumps({"body": f"row {i}"}) + "\n" for i in range(3))
    threading.Thread(target=fifo.write_text, args=(rows,), daemon=True).start()
    assert load_calibration(fifo, field="body").texts == ["row 0", "row 1", "row 2"]


def test_a_new_pipe_under_a_reused_name_is_read_afresh():
    """/dev/fd/N names another pipe once fd N is closed and reused: its texts are not the first pipe's."""
    first_name = _pipe(b"first pipe\n")
    assert load_calibration(first_name).texts == ["first pipe"]
    os.close(int(first_name.rsplit("/", 1)[1]))
    second_name = _pipe(b"second pipe\n")
    assert second_name == first_name, "the kernel gives the lowest free fd: the same name"
    assert load_calibration(second_name).texts == ["second pipe"]
    os.close(int(second_name.rsplit("/", 1)[1]))


def test_an_endless_or_huge_source_is_refused_after_the_cap_not_read_to_the_end(tmp_path, monkeypatch):
    monkeypatch.setattr(calibration, "MAX_SOURCE_BYTES", 2**20)
    with pytest.raises(CalibrationError, match="/dev/zero holds more than 1 MiB, the most one text source may hold"):
        load_calibration("/dev/zero")  # a device that never ends: read up to the cap, not until memory runs out
    monkeypatch.setattr(calibration, "MAX_SOURCE_LINES", 1000)
    lines = tmp_path / "many.txt"
    lines.write_text("".join(f"text {i}\n" for i in range(1001)))
    with pytest.raises(CalibrationError, match="holds more than 1,000 lines"):
        load_calibration(lines)
    lines.write_text("".join(f"text {i}\n" for i in range(1000)))
    assert len(load_calibration(lines).texts) == 1000
