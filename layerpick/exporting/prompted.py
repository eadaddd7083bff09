"""A prompted export: the template shipped inside the saved tokenizer, checked there, its edge effect measured.

Owns what an export with a prompt template adds to a plain one: the tokenizer whose post-processor wraps
every text (`layerpick.core.prompt_tokenizer`, the one collection used), the tokenizer class every reader
honours (transformers' task-specific classes such as BertTokenizer or LlamaTokenizerFast rebuild the
post-processor from their own settings on load and would drop the template, the generic fast class reads
`tokenizer.json` as it is), the check that the saved `tokenizer.json` read by the Rust `tokenizers` library
(what TEI runs) gives the same ids and keeps the suffix when a text is truncated, and the measured
difference between tokenizing the text on its own (what ships) and tokenizing the wrapped string.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import LoadedModel
from layerpick.core.prompt_tokenizer import (
    added_tokens,
    check_room,
    edge_differences,
    prompted_tokenizer,
    template_ids,
)
from layerpick.core.prompts import PLAIN, Prompt

GENERIC_TOKENIZER_CLASS = "PreTrainedTokenizerFast"
PROBE = "layer selection for sentence embeddings. "  # repeated past max_seq_length to test truncation


@dataclass(frozen=True)
class EdgeEffect:
    """Tokenizing the text on its own vs the wrapped string, on the parity texts, at layer K of the full model."""

    texts: int
    texts_tokenized_differently: int
    texts_truncated: int  # of those, texts whose wrapped string is longer than max_seq_length (not compared)
    max_abs_diff: float | None  # over the texts that fit
    min_cosine: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "texts": self.texts,
            "texts_tokenized_differently": self.texts_tokenized_differently,
            "texts_truncated": self.texts_truncated,
            "max_abs_diff_vs_wrapped_string": self.max_abs_diff,
            "min_cosine_vs_wrapped_string": self.min_cosine,
        }


def export_tokenizer(loaded: LoadedModel, prompt: Prompt, max_seq_length: int):
    """The tokenizer to save: the model's own, or its prompted copy once the template is known to fit."""
    tokenizer = prompted_tokenizer(loaded.tokenizer, prompt)
    check_room(tokenizer, prompt, max_seq_length)
    return tokenizer


def measure_edges(
    loaded: LoadedModel, prompt: Prompt, texts: Sequence[str], layer: int, config: CollectConfig
) -> EdgeEffect:
    """How far layer K of the full model on the shipped tokens (`config` carries the prompt) is from the same
    layer on the wrapped string tokenized as one piece, over the texts whose wrapped string fits in max_length."""
    tokenizer = prompted_tokenizer(loaded.tokenizer, prompt)
    differ = edge_differences(loaded.tokenizer, tokenizer, prompt, texts, config.max_length)
    whole = tokenizer([prompt.wrap(t) for t in texts])["input_ids"]
    kept = torch.tensor([len(ids) <= config.max_length for ids in whole])
    plain = CollectConfig(
        pooling=config.pooling,
        representation=config.representation,
        batch_size=config.batch_size,
        max_length=config.max_length,
        progress=False,
        prompt=PLAIN,
    )
    wrapped = collect(loaded, [prompt.wrap(t) for t in texts], plain).layer(layer).float()
    shipped = collect(loaded, list(texts), config).layer(layer).float()
    shipped, wrapped = shipped[kept], wrapped[kept]  # a truncated wrapped string lost its end
    cosine = torch.nn.functional.cosine_similarity(shipped, wrapped, dim=-1)
    if not kept.any():
        return EdgeEffect(len(texts), sum(differ), len(texts), None, None)
    return EdgeEffect(
        len(texts), sum(differ), int((~kept).sum()), (shipped - wrapped).abs().max().item(), cosine.min().item()
    )


def finish_layout(directory: Path) -> None:
    """Name the generic fast tokenizer class, so transformers loads `tokenizer.json` with its template."""
    path = directory / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["tokenizer_class"] = GENERIC_TOKENIZER_CLASS
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def prompt_problems(directory: Path, tokenizer, max_seq_length: int) -> list[str]:
    """What keeps the saved directory from applying the template in every reader; [] when nothing does."""
    from tokenizers import Tokenizer

    config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    problems = []
    if config.get("tokenizer_class") != GENERIC_TOKENIZER_CLASS:
        problems.append(f"tokenizer_config.json must name {GENERIC_TOKENIZER_CLASS} so the template is kept")
    saved = Tokenizer.from_file(str(directory / "tokenizer.json"))  # the Rust library TEI reads it with
    short = tokenizer("A cat.")["input_ids"]
    if saved.encode("A cat.").ids != short:
        problems.append("tokenizer.json does not give the prompted tokens the export was checked with")
    saved.enable_truncation(max_seq_length)
    long_ids = saved.encode(PROBE * max_seq_length).ids
    tail = short[len(short) - _trailing(tokenizer) :]
    if len(long_ids) != max_seq_length or long_ids[len(long_ids) - len(tail) :] != tail:
        problems.append("tokenizer.json does not keep the template's suffix when a long text is truncated")
    return problems


def prompt_facts(loaded: LoadedModel, prompt: Prompt, edges: EdgeEffect | None) -> dict[str, Any] | None:
    """What layerpick.json records about the template (None for plain text)."""
    if prompt.is_plain:
        return None
    prefix, suffix = template_ids(loaded.tokenizer, prompt)
    convert = loaded.tokenizer.convert_ids_to_tokens
    return {
        **prompt.to_json(),
        "applied_by": "tokenizer.json post-processor (TemplateProcessing)",
        "prefix_tokens": convert(prefix),
        "suffix_tokens": convert(suffix),
        "tokens_added": added_tokens(prompted_tokenizer(loaded.tokenizer, prompt)),
        "edges": edges.to_json() if edges else None,
    }


def _trailing(tokenizer) -> int:
    """How many tokens follow the text: the suffix plus the model's own closing special tokens."""
    marked = tokenizer("A cat.", return_special_tokens_mask=True)["special_tokens_mask"]
    count = 0
    for flag in reversed(marked):
        if not flag:
            break
        count += 1
    return count
