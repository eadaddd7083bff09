"""Tests for layerpick.selection.views: seeded, wrapper-free text augmentations."""

import random
import string

import pytest

from layerpick.selection.views import (
    keyboard_typo,
    make_views,
    split_words,
    substitute_characters,
)

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Intermediate layers often give better embeddings than the last one.",
    "a",
    "I",
    "ab",
    "123 !!",
    "",
    "Hello, world",
]
ALLOWED_NEW = set(string.ascii_letters) | {" "}


def test_deterministic_for_seed_and_changes_with_seed():
    assert make_views(TEXTS, 4, seed=0) == make_views(TEXTS, 4, seed=0)
    assert make_views(TEXTS[:2], 4, seed=0) != make_views(TEXTS[:2], 4, seed=1)


def test_shape_and_non_empty():
    views = make_views(TEXTS, 3, seed=5)
    assert len(views) == len(TEXTS)
    for text, text_views in zip(TEXTS, views):
        assert len(text_views) == 3
        if text:
            assert all(text_views)


def test_no_wrapper_characters_added():
    for text, text_views in zip(TEXTS, make_views(TEXTS, 6, seed=2)):
        for view in text_views:
            assert set(view) - set(text) <= ALLOWED_NEW
            for ch in "[]\"'":
                assert view.count(ch) == text.count(ch)


def test_per_text_independence_of_list_order():
    forward = make_views(TEXTS, 3, seed=7)
    backward = make_views(list(reversed(TEXTS)), 3, seed=7)
    assert forward == list(reversed(backward))
    assert make_views([TEXTS[1]], 3, seed=7) == [forward[1]]


def test_views_differ_from_text():
    for view in make_views(TEXTS[:2], 6, seed=3)[0]:
        assert view != TEXTS[0]


def test_split_words_only_inserts_spaces():
    rng = random.Random(0)
    for text in TEXTS:
        view = split_words(text, rng)
        assert view.replace(" ", "") == text.replace(" ", "")
        if any(len(word) >= 2 for word in text.split()):
            assert view.count(" ") > text.count(" ")
        else:
            assert view == text


@pytest.mark.parametrize("fn", [substitute_characters, keyboard_typo])
def test_letter_replacements_keep_layout(fn):
    rng = random.Random(1)
    text = TEXTS[1]
    view = fn(text, rng, 0.2)
    assert len(view) == len(text)
    changed = [(a, b) for a, b in zip(text, view) if a != b]
    assert changed
    for old, new in changed:
        assert old.isalpha() and new.isalpha()
        assert old.isupper() == new.isupper()
    assert fn("123 !!", rng, 0.5) == "123 !!"


def test_keyboard_typo_uses_neighbours():
    view = keyboard_typo("a" * 200 + "P" * 200, random.Random(2), 0.5)
    assert set(view[:200]) - {"a"} <= set("qwszx")
    assert set(view[200:]) - {"P"} <= set("OL")


def test_errors():
    with pytest.raises(ValueError):
        make_views(TEXTS, 0, seed=0)
    with pytest.raises(ValueError):
        substitute_characters("abc", random.Random(0), 1.5)
