"""A template carried by the tokenizer itself: fixed token sequences added before and after the text.

The template's prefix and suffix are tokenized once and written into the fast tokenizer's post-processor
(`tokenizer.json` TemplateProcessing, merged with the special tokens the model already adds, such as BERT's
[CLS] ... [SEP] or Gemma's <bos>). Every reader of `tokenizer.json` applies it: transformers' fast tokenizers
(sentence-transformers, infinity, vLLM) and the Rust `tokenizers` crate (TEI). Special tokens are added after
truncation, which reserves room for them, so a long text is cut but the suffix (and the last token a
prompted embedding pools) always stays. Collection uses the same prompted tokenizer, so the tokens scored are
the tokens an export computes.

The text is tokenized on its own, not inside the wrapped string: where a byte-level or sentencepiece
tokenizer would merge the text's first or last character with the template's (`mat."` is one token `."`
in the wrapped string, `.` `"` here), the two differ by a token at the edge; `edge_differences` measures it.
"""

from __future__ import annotations

import copy
import json
import logging
import weakref
from typing import Any, Sequence

from layerpick.core.prompts import Prompt, PromptError

logger = logging.getLogger(__name__)

PREFIX_KEY = "[layerpick-prefix]"
SUFFIX_KEY = "[layerpick-suffix]"
_CONTEXTS = ("a", "x", "1", "A")  # a neutral character before the suffix, to tokenize it as it follows a text
_CACHE: "weakref.WeakKeyDictionary[Any, dict[str, Any]]" = weakref.WeakKeyDictionary()


def prompted_tokenizer(tokenizer, prompt: Prompt):
    """A copy of `tokenizer` whose post-processor wraps every text in `prompt`; `tokenizer` itself when plain.
    Copies are cached per tokenizer and template."""
    if prompt.is_plain:
        return tokenizer
    cached = _CACHE.setdefault(tokenizer, {})
    if prompt.template not in cached:
        cached[prompt.template] = _build(tokenizer, prompt)
    return cached[prompt.template]


def template_ids(tokenizer, prompt: Prompt) -> tuple[list[int], list[int]]:
    """The token ids of the template's prefix and suffix, as they read around a text."""
    prefix = _ids(tokenizer, prompt.prefix) if prompt.prefix else []
    return prefix, _suffix_ids(tokenizer, prompt.suffix) if prompt.suffix else []


def added_tokens(tokenizer) -> int:
    """How many tokens the post-processor adds to one text (template plus the model's own special tokens)."""
    return _backend(tokenizer).num_special_tokens_to_add(False)


def check_room(tokenizer, prompt: Prompt, max_length: int) -> None:
    """A PromptError when the template and special tokens leave no token of `max_length` for the text."""
    if prompt.is_plain:
        return
    added = added_tokens(tokenizer)
    if added >= max_length:
        raise PromptError(
            f"the prompt template and special tokens take {added} tokens, leaving no room for text "
            f"within the maximum length of {max_length}; use a shorter template or a longer length"
        )


def edge_differences(tokenizer, prompted, prompt: Prompt, texts: Sequence[str], max_length: int) -> list[bool]:
    """Per text: whether the prompted tokenizer's ids differ from tokenizing the wrapped string (both cut to
    `max_length`: a wrapped string that is too long loses the template's end, the prompted ids never do)."""
    ours = prompted(list(texts), truncation=True, max_length=max_length)["input_ids"]
    wrapped = tokenizer([prompt.wrap(t) for t in texts], truncation=True, max_length=max_length)["input_ids"]
    return [a != b for a, b in zip(ours, wrapped)]


def prompted_post_processor(
    processor: dict[str, Any] | None, prefix: tuple[list[int], list[str]], suffix: tuple[list[int], list[str]]
) -> dict[str, Any]:
    """The post-processor JSON that adds `prefix`/`suffix` (ids, tokens) around each sequence, inside the
    special tokens `processor` already adds."""
    pieces = {
        key: {"id": key, "ids": ids, "tokens": tokens}
        for key, (ids, tokens) in ((PREFIX_KEY, prefix), (SUFFIX_KEY, suffix))
        if ids
    }
    if processor is None:
        return _wrapped(_template([], "A", []), pieces)
    kind = processor.get("type")
    if kind == "TemplateProcessing":
        return _wrapped(processor, pieces)
    if kind == "Sequence":
        return _wrapped_sequence(processor, pieces)
    if kind == "ByteLevel":
        return {"type": "Sequence", "processors": [processor, _wrapped(_template([], "A", []), pieces)]}
    if kind in ("BertProcessing", "RobertaProcessing"):
        return _from_bert_like(processor, pieces)
    raise PromptError(f"cannot add a prompt template to a tokenizer whose post-processor is {kind}")


def _build(tokenizer, prompt: Prompt):
    from tokenizers import Tokenizer

    backend = _backend(tokenizer)
    prefix_ids, suffix_ids = template_ids(tokenizer, prompt)
    convert = tokenizer.convert_ids_to_tokens
    data = json.loads(backend.to_str())
    data["post_processor"] = prompted_post_processor(
        data.get("post_processor"), (prefix_ids, convert(prefix_ids)), (suffix_ids, convert(suffix_ids))
    )
    processor = Tokenizer.from_str(json.dumps(data)).post_processor
    copied = copy.deepcopy(tokenizer)
    _backend(copied).post_processor = processor
    logger.debug("prompt %s: %d prefix and %d suffix tokens", prompt.label, len(prefix_ids), len(suffix_ids))
    return copied


def _backend(tokenizer):
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise PromptError("prompt templates need a fast tokenizer (a tokenizer.json); this model has a slow one")
    return backend


def _ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _suffix_ids(tokenizer, suffix: str) -> list[int]:
    """The suffix's tokens after a text: tokenized behind a one-character context and split off it, so a
    tokenizer that marks the start of its input (sentencepiece's leading space) does not mark the suffix."""
    for context in _CONTEXTS:
        head, whole = _ids(tokenizer, context), _ids(tokenizer, context + suffix)
        if len(whole) > len(head) and whole[: len(head)] == head:  # the context did not merge into the suffix
            return whole[len(head) :]
    return _ids(tokenizer, suffix)


def _template(prefix_items: list, sequence: str, suffix_items: list) -> dict[str, Any]:
    """A bare TemplateProcessing with one sequence (and its pair) between fixed items."""
    single = [*prefix_items, _seq("A", 0), *suffix_items]
    pair = [*prefix_items, _seq("A", 0), *suffix_items, _seq("B", 1)]
    return {"type": "TemplateProcessing", "single": single, "pair": pair, "special_tokens": {}}


def _wrapped(processor: dict[str, Any], pieces: dict[str, dict]) -> dict[str, Any]:
    """`processor` (a TemplateProcessing) with the prefix before and the suffix after every sequence."""
    out = copy.deepcopy(processor)
    for name in ("single", "pair"):
        out[name] = [item for entry in out[name] for item in _around(entry, pieces)]
    out["special_tokens"] = {**out.get("special_tokens", {}), **pieces}
    return out


def _around(entry: dict[str, Any], pieces: dict[str, dict]) -> list[dict[str, Any]]:
    if "Sequence" not in entry:
        return [entry]
    type_id = entry["Sequence"]["type_id"]
    before = [_special(PREFIX_KEY, type_id)] if PREFIX_KEY in pieces else []
    after = [_special(SUFFIX_KEY, type_id)] if SUFFIX_KEY in pieces else []
    return [*before, entry, *after]


def _wrapped_sequence(processor: dict[str, Any], pieces: dict[str, dict]) -> dict[str, Any]:
    members = processor.get("processors", [])
    templates = [i for i, member in enumerate(members) if member.get("type") == "TemplateProcessing"]
    if len(templates) > 1:
        raise PromptError("cannot add a prompt template to a tokenizer with several template post-processors")
    out = copy.deepcopy(processor)
    if templates:
        out["processors"][templates[0]] = _wrapped(members[templates[0]], pieces)
    else:
        out["processors"].append(_wrapped(_template([], "A", []), pieces))
    return out


def _from_bert_like(processor: dict[str, Any], pieces: dict[str, dict]) -> dict[str, Any]:
    """BertProcessing / RobertaProcessing as the equivalent TemplateProcessing, then wrapped."""
    (cls, cls_id), (sep, sep_id) = processor["cls"], processor["sep"]
    roberta = processor["type"] == "RobertaProcessing"
    single = [_special(cls, 0), _seq("A", 0), _special(sep, 0)]
    second = 0 if roberta else 1
    pair = [*single, *([_special(sep, 0)] if roberta else []), _seq("B", second), _special(sep, second)]
    template = {
        "type": "TemplateProcessing",
        "single": single,
        "pair": pair,
        "special_tokens": {
            cls: {"id": cls, "ids": [cls_id], "tokens": [cls]},
            sep: {"id": sep, "ids": [sep_id], "tokens": [sep]},
        },
    }
    wrapped = _wrapped(template, pieces)
    if not roberta:
        return wrapped
    offsets = {
        "type": "ByteLevel",
        "add_prefix_space": processor.get("add_prefix_space", True),
        "trim_offsets": processor.get("trim_offsets", True),
        "use_regex": True,
    }
    return {"type": "Sequence", "processors": [offsets, wrapped]}


def _special(key: str, type_id: int) -> dict[str, Any]:
    return {"SpecialToken": {"id": key, "type_id": type_id}}


def _seq(name: str, type_id: int) -> dict[str, Any]:
    return {"Sequence": {"id": name, "type_id": type_id}}
