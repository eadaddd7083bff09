"""Prompt templates: parsing and bad input, and the tokenizer post-processor that carries a template
(every post-processor kind, truncation keeping the suffix, the Rust reader of tokenizer.json)."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from layerpick.core.prompt_tokenizer import (
    added_tokens,
    check_room,
    edge_differences,
    prompted_post_processor,
    prompted_tokenizer,
    template_ids,
)
from layerpick.core.prompts import (
    BUILTIN_TEMPLATES,
    PLAIN,
    PromptError,
    default_pooling,
    parse_prompt,
    parse_prompts,
    prompt_from_json,
)
from tests.testkit.tiny import TEXTS, make_tokenizer

EOL = BUILTIN_TEMPLATES["eol"]


def test_builtin_eol_is_prompteol():
    prompt = parse_prompt("eol")
    assert prompt.template == 'This sentence : "{text}" means in one word:"'
    assert (prompt.prefix, prompt.suffix) == ('This sentence : "', '" means in one word:"')
    assert prompt.wrap("A cat.") == 'This sentence : "A cat." means in one word:"'


@pytest.mark.parametrize("value", [None, "none", "NONE", " none ", "{text}"])
def test_plain_text(value):
    assert parse_prompt(value) == PLAIN and PLAIN.is_plain and PLAIN.wrap("x") == "x"


def test_literal_template_and_its_builtin_name():
    assert parse_prompt("Query: {text}").name == "custom"
    assert parse_prompt("Query: {text}").suffix == ""
    assert parse_prompt(EOL).name == "eol"  # the literal of a built-in is recognised
    assert parse_prompt("EOL") == parse_prompt("eol")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("This sentence means", "unknown prompt 'This sentence means'"),
        ("eool", "unknown prompt 'eool'.*none, eol, sth, sum"),
        ("{text} and {text}", "exactly one {text} .got 2."),
        ("", "empty"),
    ],
)
def test_bad_templates_are_one_line_errors(value, message):
    with pytest.raises(PromptError, match=message) as error:
        parse_prompt(value)
    assert "\n" not in str(error.value)


def test_several_templates():
    assert [p.name for p in parse_prompts("none,eol,sum")] == ["none", "eol", "sum"]
    assert parse_prompts(None) == (PLAIN,)
    assert [p.name for p in parse_prompts('Say "{text}", briefly')] == ["custom"]  # a comma inside a template
    for bad, message in (
        ("none,eol,eol", "more than once"),
        ("eol,,sum", "comma-separated"),
        ("eol,nope", "unknown prompt 'nope'"),
    ):
        with pytest.raises(PromptError, match=message):
            parse_prompts(bad)


def test_prompt_from_json_and_default_pooling():
    assert prompt_from_json(None) == PLAIN and prompt_from_json({"name": "none", "template": None}) == PLAIN
    assert prompt_from_json(parse_prompt("eol").to_json()) == parse_prompt("eol")
    assert default_pooling("mean", PLAIN) == "mean"
    assert default_pooling("mean", parse_prompt("eol")) == "lasttoken"


# --- the post-processor ---------------------------------------------------------------------------

PIECES = (([5, 6], ["p1", "p2"]), ([7], ["s1"]))


def _encode(processor_json, ids=(40, 41, 42)):
    """Run a post-processor JSON on a fixed encoding through the Rust library."""
    tokenizer = Tokenizer(models.WordLevel({f"w{i}": i for i in range(50)} | {"[UNK]": 49}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    data = json.loads(tokenizer.to_str())
    data["post_processor"] = processor_json
    tokenizer = Tokenizer.from_str(json.dumps(data))
    return tokenizer.encode(" ".join(f"w{i}" for i in ids))


@pytest.mark.parametrize(
    ("original", "expected"),
    [
        (None, [5, 6, 40, 41, 42, 7]),
        ({"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]}, [1, 5, 6, 40, 41, 42, 7, 2]),
        (
            {
                "type": "RobertaProcessing",
                "sep": ["</s>", 2],
                "cls": ["<s>", 0],
                "trim_offsets": True,
                "add_prefix_space": True,
            },
            [0, 5, 6, 40, 41, 42, 7, 2],
        ),
        (
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            [5, 6, 40, 41, 42, 7],
        ),
        (
            {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<bos>": {"id": "<bos>", "ids": [3], "tokens": ["<bos>"]}},
            },
            [3, 5, 6, 40, 41, 42, 7],
        ),
        (
            {
                "type": "Sequence",
                "processors": [
                    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
                    {
                        "type": "TemplateProcessing",
                        "single": [
                            {"SpecialToken": {"id": "<bos>", "type_id": 0}},
                            {"Sequence": {"id": "A", "type_id": 0}},
                        ],
                        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                        "special_tokens": {"<bos>": {"id": "<bos>", "ids": [3], "tokens": ["<bos>"]}},
                    },
                ],
            },
            [3, 5, 6, 40, 41, 42, 7],
        ),
    ],
)
def test_every_post_processor_kind_gets_the_template_inside_its_special_tokens(original, expected):
    encoding = _encode(prompted_post_processor(original, *PIECES))
    assert encoding.ids == expected
    text_positions = [i for i, flag in enumerate(encoding.special_tokens_mask) if not flag]
    assert [encoding.ids[i] for i in text_positions] == [40, 41, 42]  # template tokens count as added tokens


def test_unknown_post_processor_is_refused():
    with pytest.raises(PromptError, match="post-processor is Mystery"):
        prompted_post_processor({"type": "Mystery"}, *PIECES)


@pytest.mark.parametrize("family", ["llama", "bert"])
def test_prompted_tokenizer_wraps_and_truncation_keeps_the_suffix(family):
    tokenizer = make_tokenizer(family)
    prompt = parse_prompt("Meaning of <{text}> in one word:")
    prompted = prompted_tokenizer(tokenizer, prompt)
    assert prompted_tokenizer(tokenizer, prompt) is prompted  # cached
    assert prompted_tokenizer(tokenizer, PLAIN) is tokenizer
    prefix, suffix = template_ids(tokenizer, prompt)
    plain_added = added_tokens(tokenizer)
    assert added_tokens(prompted) == plain_added + len(prefix) + len(suffix)
    ids = prompted(TEXTS[0])["input_ids"]
    assert tokenizer(TEXTS[0])["input_ids"] != ids  # the original is untouched
    long_text = " ".join(TEXTS) * 5
    limit = added_tokens(prompted) + 7
    cut = prompted(long_text, truncation=True, max_length=limit)["input_ids"]
    assert len(cut) == limit
    closing = 1 if family == "bert" else 0  # [SEP] after the suffix
    assert cut[len(cut) - closing - len(suffix) : len(cut) - closing] == suffix
    assert cut[plain_added - closing : plain_added - closing + len(prefix)] == prefix


def test_no_room_for_text_is_an_error():
    tokenizer = make_tokenizer("llama")
    prompt = parse_prompt("eol")
    prompted = prompted_tokenizer(tokenizer, prompt)
    check_room(prompted, prompt, added_tokens(prompted) + 1)
    with pytest.raises(PromptError, match="leaving no room for text"):
        check_room(prompted, prompt, added_tokens(prompted))


def test_suffix_ids_are_read_after_a_text():
    """A tokenizer that marks the start of its input (a leading-space prefix) would mark a suffix tokenized
    alone; the suffix is tokenized behind a character instead."""
    from transformers import PreTrainedTokenizerFast

    base = Tokenizer.from_str(make_tokenizer("llama").backend_tokenizer.to_str())
    base.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=base, pad_token="<pad>")
    prompt = parse_prompt("{text}, the lazy dog")
    _, suffix = template_ids(tokenizer, prompt)
    alone = tokenizer(prompt.suffix, add_special_tokens=False)["input_ids"]
    behind = tokenizer("a" + prompt.suffix, add_special_tokens=False)["input_ids"]
    assert suffix == behind[len(tokenizer("a", add_special_tokens=False)["input_ids"]) :]
    assert tokenizer.convert_ids_to_tokens(alone)[0].startswith("Ġ") and suffix != alone


def test_edge_differences_are_measured():
    tokenizer = make_tokenizer("llama")
    prompt = parse_prompt("eol")
    prompted = prompted_tokenizer(tokenizer, prompt)
    differ = edge_differences(tokenizer, prompted, prompt, ["the quick brown fox", "numbers like 42"], 512)
    wrapped = [tokenizer(prompt.wrap(t))["input_ids"] for t in ["the quick brown fox", "numbers like 42"]]
    ours = [prompted(t)["input_ids"] for t in ["the quick brown fox", "numbers like 42"]]
    assert differ == [a != b for a, b in zip(ours, wrapped)]


def test_collect_takes_a_name_or_template_string():
    from tests.testkit.tiny import make_loaded

    from layerpick.core.collect import CollectConfig, collect

    loaded = make_loaded("llama")
    by_name = collect(loaded, TEXTS[:2], CollectConfig(progress=False, prompt="eol"))
    by_prompt = collect(loaded, TEXTS[:2], CollectConfig(progress=False, prompt=parse_prompt(EOL)))
    assert by_name.prompt == parse_prompt("eol") and by_name.pooling == "lasttoken"
    assert (by_name.pooled == by_prompt.pooled).all()
