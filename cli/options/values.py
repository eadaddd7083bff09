"""The values behind the commands' options: each option's default read from its config dataclass (`default`, the
one source of the defaults), the options handed to a config or a library function by name (`build`), and the
comma-separated batch-size lists of bench and run (`parse_sizes`, `sizes_text`).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

import typer

from layerpick._util.numerals import ascii_int


def default(source: Any, path: str) -> Any:
    """The default of field `path` of the dataclass `source` (`default(SelectConfig, "batch_size")`), where a
    dotted path reads a field of a field's default (`"collect.batch_size"`: the batch size of
    `SelectConfig().collect`); for a function, the default of its parameter `path`. The CLI's options take
    their defaults from here, so changing a default in the dataclass changes the CLI."""
    head, _, rest = path.partition(".")
    if dataclasses.is_dataclass(source):
        fields = {field.name: field for field in dataclasses.fields(source)}
        if head not in fields:
            raise AttributeError(f"{source.__name__} has no field {head!r}")
        field = fields[head]
        if field.default is not dataclasses.MISSING:
            value = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        else:
            raise TypeError(f"{source.__name__}.{head} has no default")
    else:
        parameter = inspect.signature(source).parameters[head]
        if parameter.default is inspect.Parameter.empty:
            raise TypeError(f"{source.__name__}({head}) has no default")
        value = parameter.default
    for name in rest.split(".") if rest else ():
        value = getattr(value, name)
    return value


def build(target: Callable, parameters: dict, **values: Any) -> Any:
    """`target` (a config dataclass or a library function) called with the command's `parameters` that are
    named as its fields or parameters, and with `values` (by field name) for the ones a command names otherwise
    or parses first. A command's options are named as the config fields they set, so this is the one place
    that hands them over: `build(ServeConfig, locals())`."""
    if dataclasses.is_dataclass(target):
        names = {field.name for field in dataclasses.fields(target)}
    else:
        names = set(inspect.signature(target).parameters)
    return target(
        **{name: value for name, value in parameters.items() if name in names and name not in values}, **values
    )


def sizes_text(sizes: tuple[int, ...]) -> str:
    """Batch sizes as an option takes them: `(1, 32)` -> "1,32" (`parse_sizes` reads it back)."""
    return ",".join(str(size) for size in sizes)


def parse_sizes(text: str, option: str) -> tuple[int, ...]:
    """A comma-separated list of positive batch sizes, or a usage error naming `option`."""
    sizes = tuple(ascii_int(part.strip()) for part in text.split(",") if part.strip())
    if None in sizes:
        raise typer.BadParameter(f"expected comma-separated integers, got {text!r}", param_hint=option)
    if not sizes or min(sizes) < 1:
        raise typer.BadParameter(f"batch sizes must be positive integers, got {text!r}", param_hint=option)
    return sizes
