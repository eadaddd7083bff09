"""Typer renders option help as rich markup, where `[word]` is a style tag and disappears: `--max-loss ...
[default: 0.12]` was shown as `... may have .`. Every bracket in a help text is either escaped (`\\[`) or absent,
so the rendered help says what the source says."""

from __future__ import annotations

import re

import typer

from layerpick.cli.commands import app

UNESCAPED_TAG = re.compile(r"(?<!\\)\[[a-z/]")


def help_texts() -> list[tuple[str, str]]:
    group = typer.main.get_command(app)
    texts = []
    for name, command in group.commands.items():
        for parameter in command.params:  # options and arguments alike
            if getattr(parameter, "help", None):
                texts.append((f"{name} {parameter.opts[0]}", parameter.help))
    return texts


def test_the_commands_have_option_help():
    assert len(help_texts()) > 100


def test_no_option_help_holds_a_bracket_rich_would_swallow():
    swallowed = [(option, text) for option, text in help_texts() if UNESCAPED_TAG.search(text)]
    assert swallowed == []
