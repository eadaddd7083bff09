"""`is_finite`: the one test of a usable score, for every kind of value a score arrives as."""

from __future__ import annotations

import math

import numpy as np
import pytest

from layerpick._util.finite import is_finite


@pytest.mark.parametrize(
    ("value", "usable"),
    [
        (0.5, True),
        (3, True),
        (np.float32(0.25), True),
        (np.int64(2), True),
        (None, False),
        (math.nan, False),
        (math.inf, False),
        (-math.inf, False),
        (True, False),
        ("0.5", False),
    ],
)
def test_a_score_is_usable_only_as_a_finite_real_number(value, usable):
    assert is_finite(value) is usable
