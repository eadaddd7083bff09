"""Prompt templates: what wraps a text before the model sees it, by name or as a literal template.

A template is a string with exactly one `{text}` placeholder (`This sentence : "{text}" means in one word:"`),
or a built-in name (`eol`, `sth`, `sum`), or `none` for the plain text. Parsing and checking happen here,
before any model is loaded; how a template reaches the tokens (the tokenizer's post-processor, so that an
export applies it by itself) lives in `prompt_tokenizer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from layerpick.errors import LayerpickError

PLACEHOLDER = "{text}"
NONE = "none"
# The prompt-based sentence embeddings of Jiang et al. 2023 (PromptEOL) and Zhang et al. 2024 (PromptSTH,
# PromptSUM): a decoder reads the text inside a sentence that asks for its meaning, and the last token,
# where the answer would start, is pooled.
BUILTIN_TEMPLATES = {
    "eol": 'This sentence : "{text}" means in one word:"',
    "sth": 'This sentence : "{text}" means something',
    "sum": 'This sentence : "{text}" can be summarized as',
}
PROMPTED_POOLING = "lasttoken"
DEFAULT_PROMPT = NONE  # what --prompt means when not given (see benchmarks/results/prompts.md)


class PromptError(LayerpickError):
    """A template that cannot be used: no or several `{text}`, an unknown name, no room left for text."""


@dataclass(frozen=True)
class Prompt:
    """A parsed template: `name` is a built-in name, `none`, or `custom`; `template` None means plain text."""

    name: str
    template: str | None

    @property
    def prefix(self) -> str:
        return "" if self.template is None else self.template.split(PLACEHOLDER)[0]

    @property
    def suffix(self) -> str:
        return "" if self.template is None else self.template.split(PLACEHOLDER)[1]

    @property
    def is_plain(self) -> bool:
        return self.template is None

    @property
    def label(self) -> str:
        """The short name a report shows: the built-in name, `none`, or `custom`."""
        return self.name

    def wrap(self, text: str) -> str:
        """The wrapped string (what the template means; the tokens come from `prompt_tokenizer`)."""
        return text if self.template is None else self.prefix + text + self.suffix

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "template": self.template}

    def cli_value(self) -> str:
        """What `--prompt` takes to give this template again."""
        return self.name if self.name != "custom" else str(self.template)


PLAIN = Prompt(NONE, None)


def parse_prompt(value: str | None) -> Prompt:
    """One template: None or `none` -> plain text; a built-in name; or a literal with exactly one `{text}`."""
    if value is None:
        return PLAIN
    text = value.strip()
    if text.lower() == NONE or text == "":
        return PLAIN if text else _empty()
    if PLACEHOLDER not in value:
        return _builtin(text)
    count = value.count(PLACEHOLDER)
    if count != 1:
        raise PromptError(f"a prompt template needs exactly one {PLACEHOLDER} (got {count}): {value!r}")
    if value.replace(PLACEHOLDER, "").strip() == "":
        return PLAIN  # "{text}" alone wraps nothing
    return Prompt(_builtin_name_of(value) or "custom", value)


def as_prompt(value: "Prompt | str | None") -> Prompt:
    """A Prompt from a Prompt, a template or name, or None (plain text)."""
    return value if isinstance(value, Prompt) else parse_prompt(value)


def parse_prompts(value: str | None) -> tuple[Prompt, ...]:
    """Several templates for select/validate/run: a literal template (alone), or comma-separated names such as
    `none,eol,sum`. Duplicates are an error, so every (template, layer) pair is scored once."""
    if value is None:
        return (PLAIN,)
    if PLACEHOLDER in value:
        return (parse_prompt(value),)
    parts = [part.strip() for part in value.split(",")]
    if any(not part for part in parts):
        raise PromptError(
            f"--prompt takes a template with {PLACEHOLDER} or comma-separated names ({_choices()}); got {value!r}"
        )
    prompts = tuple(parse_prompt(part) for part in parts)
    names = [p.name for p in prompts]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise PromptError(f"--prompt lists {', '.join(duplicates)} more than once")
    return prompts


def prompt_from_json(data: dict[str, Any] | None) -> Prompt:
    """The prompt a report or layerpick.json recorded (absent: plain text, as before prompts existed)."""
    if not data or data.get("template") is None:
        return PLAIN
    return parse_prompt(data["template"])


def default_pooling(family_default: str, prompt: Prompt) -> str:
    """With a prompt the last token (where the one-word answer would start) is pooled; else the family's."""
    return family_default if prompt.is_plain else PROMPTED_POOLING


def describe_builtins() -> str:
    """`name: template` for each built-in, for --help and errors."""
    return "; ".join(f"{name}: {template}" for name, template in BUILTIN_TEMPLATES.items())


def _builtin(name: str) -> Prompt:
    key = name.lower()
    if "," in key and all(part.strip() in (NONE, *BUILTIN_TEMPLATES) for part in key.split(",")):
        raise PromptError(
            f"unknown prompt {name!r}: give one template here (select, validate and run take several, comma-separated)"
        )
    if key not in BUILTIN_TEMPLATES:
        raise PromptError(f"unknown prompt {name!r}: give a template with {PLACEHOLDER}, or one of {_choices()}")
    return Prompt(key, BUILTIN_TEMPLATES[key])


def _builtin_name_of(template: str) -> str | None:
    return next((name for name, known in BUILTIN_TEMPLATES.items() if known == template), None)


def _choices() -> str:
    return ", ".join([NONE, *BUILTIN_TEMPLATES])


def _empty() -> Prompt:
    raise PromptError(f"--prompt is empty: give a template with {PLACEHOLDER}, or one of {_choices()}")
