"""A text source's fingerprint is its content (`core.fingerprint.texts_fingerprint`): a file rewritten with the same
size and modification time is other texts; the same bytes at another path are the same."""

from __future__ import annotations

import os

from layerpick.core.fingerprint import texts_fingerprint


def test_the_same_size_and_time_with_other_bytes_is_another_fingerprint(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("first text\nsecond text\n", encoding="utf-8")
    before = texts_fingerprint(str(path))
    times = os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns
    path.write_text("FIRST TEXT\nSECOND TEXT\n", encoding="utf-8")
    os.utime(path, ns=times)  # a copy that keeps times
    assert texts_fingerprint(str(path)) != before


def test_the_same_bytes_elsewhere_and_what_has_no_content(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "corpus.jsonl").write_text('{"text": "one"}\n', encoding="utf-8")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "corpus.jsonl").write_text('{"text": "one"}\n', encoding="utf-8")
    assert texts_fingerprint(str(tmp_path / "a")) == texts_fingerprint(str(tmp_path / "b"))
    assert texts_fingerprint(None) is None and texts_fingerprint(str(tmp_path / "none.txt")) is None
