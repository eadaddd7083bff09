"""Numbers read from text take ASCII digits only (issue 33, cause 12): the parsers that ask `_util.numerals`."""

import pytest

from layerpick._util.numerals import ascii_int, is_ascii_number
from layerpick.core.layer_list import parse_layer_list
from layerpick.core.transform import TransformError, parse_transform

ODD = ["\u00b2", "\u0663", "1_0", " 7", "7 ", "+3", "", "-", "1.0", "\uff17"]  # superscript, Arabic-Indic, fullwidth


@pytest.mark.parametrize("text", ODD)
def test_only_ascii_digits_are_numbers(text):
    assert not is_ascii_number(text)
    assert ascii_int(text) is None


def test_ascii_digits_and_a_sign_are():
    assert [ascii_int(text) for text in ("0", "42", "-3", "007")] == [0, 42, -3, 7]
    assert is_ascii_number("42") and not is_ascii_number("-3")


@pytest.mark.parametrize("size", ["\u00b2", "\u0663", "1_0"])
def test_transform_size_refuses_odd_numerals_in_one_line(size):
    with pytest.raises(TransformError, match="must be a positive integer"):
        parse_transform(f"whiten-{size}")


def test_layer_lists_refuse_odd_numerals_and_keep_negative_numbers_for_the_range_check():
    with pytest.raises(Exception, match="--layers must be comma-separated layers \\(got '\u0663'\\)"):
        parse_layer_list("1,\u0663", first=0, last=6)
    with pytest.raises(Exception, match="layer -1 is out of range"):
        parse_layer_list("-1", first=0, last=6)
    assert parse_layer_list("3, 1,3", first=0, last=6) == [1, 3]
