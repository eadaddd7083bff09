"""The texts of a heal: the held-out split, too few texts, sampling, and a BEIR corpus cut into passages."""

from __future__ import annotations

import json
import logging

import pytest

from layerpick.core.calibration import CalibrationSet
from layerpick.healing.texts import (
    MIN_HELD_OUT,
    MIN_TEXTS,
    HealTextsError,
    prepare_texts,
    sample,
    split,
    split_passages,
)
from tests.testkit.tiny import make_tokenizer

TEXTS = [f"text number {i} about topic {i % 7}" for i in range(400)]


def test_the_split_is_seeded_disjoint_and_complete():
    train, held = split(TEXTS, 0.1, seed=0)
    assert len(held) == 50 and len(train) == 350 and not set(train) & set(held)
    assert sorted(train + held) == sorted(TEXTS)
    assert split(TEXTS, 0.1, seed=0) == (train, held) and split(TEXTS, 0.1, seed=1) != (train, held)


def test_at_least_the_minimum_is_held_out():
    train, held = split(TEXTS[:MIN_TEXTS], 0.1, seed=0)
    assert len(held) == MIN_HELD_OUT and len(train) == MIN_TEXTS - MIN_HELD_OUT


def test_too_few_texts_are_refused():
    with pytest.raises(HealTextsError, match=f"too few texts to heal: {MIN_TEXTS - 1}"):
        split(TEXTS[: MIN_TEXTS - 1], 0.1, seed=0)


@pytest.mark.parametrize("share", [0.0, 1.0, -0.1])
def test_the_share_is_a_fraction(share):
    with pytest.raises(HealTextsError, match="--held-out"):
        split(TEXTS, share, seed=0)


def test_sample_keeps_order_and_size():
    texts = sample(CalibrationSet(TEXTS, "x"), 120, seed=0)
    assert len(texts.texts) == 120 and texts.texts == [t for t in TEXTS if t in set(texts.texts)]
    assert sample(CalibrationSet(TEXTS, "x"), None, seed=0).texts == TEXTS


def test_passages_fit_the_model_and_cover_the_text():
    tokenizer = make_tokenizer("bert")
    text = " ".join(["the quick brown fox jumps over the lazy dog"] * 20)
    pieces = split_passages(text, tokenizer, 16)
    assert len(pieces) > 1
    assert all(len(tokenizer(p, add_special_tokens=False)["input_ids"]) <= 16 for p in pieces)
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")
    assert split_passages("a short one", tokenizer, 16) == ["a short one"]


def test_a_beir_folder_is_read_as_passages(tmp_path, caplog):
    rows = [
        {"_id": str(i), "title": f"doc {i}", "text": " ".join(f"part {j} of {i}" for j in range(30))} for i in range(80)
    ]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "not trained on"}), encoding="utf-8")
    tokenizer = make_tokenizer("bert")
    with caplog.at_level(logging.WARNING):
        texts = prepare_texts(str(tmp_path), tokenizer, 32, held_out=0.1, max_texts=None, seed=0)
    assert texts.passages and len(texts.texts.texts) > len(rows) and "not trained on" not in texts.texts.texts
    assert all(len(tokenizer(t)["input_ids"]) <= 32 for t in texts.texts.texts)
    assert "longer than the model" not in caplog.text and "healing has been measured to work" in caplog.text
    assert texts.describe()["count"] == len(texts.train) + len(texts.held_out)


def test_several_sources_are_pooled_each_text_once(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rows = [{"_id": str(i), "title": "", "text": " ".join(f"word {j} of {i}" for j in range(20))} for i in range(60)]
    (corpus / "corpus.jsonl").write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(TEXTS[:120] + TEXTS[:10]), encoding="utf-8")  # ten repeated
    tokenizer = make_tokenizer("bert")
    texts = prepare_texts((str(corpus), str(queries)), tokenizer, 32, held_out=0.1, max_texts=None, seed=0)
    passages = prepare_texts(str(corpus), tokenizer, 32, held_out=0.1, max_texts=None, seed=0).texts.texts
    assert texts.texts.texts == passages + TEXTS[:120] and texts.passages
    described = texts.describe()
    assert described["source"] == f"{corpus} + {queries}" and described["count"] == len(passages) + 120
    assert described["sources"] == [
        {"source": str(corpus), "count": len(passages)},
        {"source": str(queries), "count": 120},
    ]
    assert "sources" not in prepare_texts(str(queries), tokenizer, 32, held_out=0.1, max_texts=None, seed=0).describe()


def test_a_corpus_gives_its_sentences_beside_its_passages(tmp_path):
    sentence = "Sentence {j} of document {i} says something short."
    rows = [{"_id": str(i), "text": " ".join(sentence.format(i=i, j=j) for j in range(12))} for i in range(40)]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    tokenizer = make_tokenizer("bert")
    texts = prepare_texts(str(tmp_path), tokenizer, 48, held_out=0.1, max_texts=None, seed=0).texts.texts
    every = {sentence.format(i=i, j=j) for i in range(40) for j in range(12)}
    sentences = [text for text in texts if text in every]  # a passage holds several sentences
    passages = len(texts) - len(sentences)
    assert passages > len(rows) and len(sentences) == min(passages, len(every))
    assert all(len(tokenizer(text)["input_ids"]) <= 48 for text in texts)
    again = prepare_texts(str(tmp_path), tokenizer, 48, held_out=0.1, max_texts=None, seed=0).texts.texts
    assert again == texts  # seeded
