"""The grammar of `--layers`, shared by validate, run, bench and export: layer numbers and a stage's own words
(validate's `all`, `last`, `selected`; bench's `frontier`), comma-separated, sorted, repeats dropped, each layer
checked against the range the stage takes. Each stage names its words, its range and its error class; the
syntax, the order and the messages are this module's."""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from layerpick._util.numerals import ascii_int
from layerpick.errors import LayerpickError, LayerRangeError

Words = Mapping[str, Callable[[], Sequence[int]]]  # a word -> the layers it stands for (may raise a one-line error)


def parse_layer_list(
    text: str,
    *,
    first: int,
    last: int | None = None,
    words: Words | None = None,
    grammar: str = "comma-separated layers",
    error: type[LayerpickError] = LayerpickError,
) -> list[int]:
    """The layers `text` names, sorted and unique, each in first..last (`last` None: not known yet, checked
    later with `check_layer_range`); `grammar` says in the error what the stage takes."""
    words = words or {}
    chosen: set[int] = set()
    for part in layer_words(text):
        if part in words:
            chosen.update(words[part]())
        else:
            chosen.add(_number(part, grammar, error))
    if not chosen:
        raise error(f"--layers must be {grammar} (got {text!r})")
    return check_layer_range(sorted(chosen), first, last)


def check_layer_syntax(
    text: str, words: Sequence[str], grammar: str, error: type[LayerpickError] = LayerpickError
) -> None:
    """The syntax alone, before any model is loaded (the range and the words' meanings need the model)."""
    for part in layer_words(text):
        if part not in words:
            _number(part, grammar, error)


def check_layer_range(layers: Sequence[int], first: int, last: int | None = None) -> list[int]:
    """`layers` unchanged, or a one-line error naming the first one outside first..last."""
    bad = [k for k in layers if k < first or (last is not None and k > last)]
    if bad:
        span = f"this model has layers {first}..{last}" if last is not None else f"the first layer is {first}"
        raise LayerRangeError(f"layer {bad[0]} is out of range for --layers: {span}")
    return list(layers)


def layer_words(text: str) -> list[str]:
    return [part.strip() for part in str(text).split(",") if part.strip()]


def _number(part: str, grammar: str, error: type[LayerpickError]) -> int:
    number = ascii_int(part)
    if number is None:
        raise error(f"--layers must be {grammar} (got {part!r})")
    return number
