"""The `--layers` grammar the stages share: numbers and a stage's words, sorted and unique, its range checked,
its errors of the stage's class with the stage's grammar in them."""

from __future__ import annotations

import pytest

from layerpick.core.layer_list import check_layer_range, check_layer_syntax, parse_layer_list
from layerpick.errors import LayerpickError, LayerRangeError


class StageError(LayerpickError):
    pass


def test_numbers_and_words_mix_sorted_and_unique():
    words = {"last": lambda: [6], "even": lambda: [2, 4, 6]}
    assert parse_layer_list(" 5, last,even,5 ", first=1, last=6, words=words) == [2, 4, 5, 6]


def test_a_word_raises_its_own_error():
    def needs_report():
        raise StageError("--layers selected needs --report")

    with pytest.raises(StageError, match="needs --report"):
        parse_layer_list("selected,2", first=0, last=4, words={"selected": needs_report})


@pytest.mark.parametrize(
    ("text", "message"),
    [("2,two", "--layers must be 2 or 6 \\(got 'two'\\)"), (" , ", "--layers must be 2 or 6 \\(got ' , '\\)")],
)
def test_bad_syntax_is_the_stage_s_error_naming_its_grammar(text, message):
    with pytest.raises(StageError, match=message):
        parse_layer_list(text, first=1, last=6, grammar="2 or 6", error=StageError)


def test_the_range_is_checked_and_an_unknown_top_later():
    with pytest.raises(LayerRangeError, match="layer 7 is out of range for --layers: this model has layers 1..6"):
        parse_layer_list("3,7", first=1, last=6)
    assert parse_layer_list("3,70", first=1) == [3, 70]  # the top is not known yet
    with pytest.raises(LayerRangeError, match="layer 0 is out of range for --layers: the first layer is 1"):
        parse_layer_list("0", first=1)
    with pytest.raises(LayerRangeError, match="layer 70 is out of range"):
        check_layer_range([3, 70], 1, 30)


def test_the_syntax_alone_needs_no_model():
    check_layer_syntax("all, 3,last", ("all", "last"), "words")
    with pytest.raises(LayerpickError, match="--layers must be words \\(got 'lst'\\)"):
        check_layer_syntax("3,lst", ("all", "last"), "words")
