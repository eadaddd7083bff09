"""A tokenizer that is not the model's vocabulary is refused at load (`core.vocabulary`), whichever way it shows:
far fewer tokens than the embedding matrix has rows, or ordinary text read as the unknown token."""

from __future__ import annotations

import pytest

from layerpick.core.models import load_model
from layerpick.core.vocabulary import check_vocabulary
from layerpick.errors import ModelFileError
from tests.testkit.faults import no_vocabulary_model
from tests.testkit.tiny import CONFIGS, make_model, make_tokenizer


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_every_tiny_familys_own_tokenizer_passes(family):
    check_vocabulary(make_tokenizer(family), make_model(family), "tiny")


def test_a_folder_without_its_vocabulary_is_refused_naming_the_missing_files(tmp_path):
    folder = no_vocabulary_model(tmp_path / "bert")
    with pytest.raises(ModelFileError) as error:
        load_model(str(folder))
    message = str(error.value)
    assert "5 tokens for the model's 320 embedding rows" in message and "are [UNK]" in message
    assert f"vocab.txt, tokenizer.json are missing from {folder}" in message and "\n" not in message


def test_a_tokenizer_of_the_right_size_that_reads_words_as_unknown_is_refused():
    """Rows and tokens agree, but the vocabulary is another language's: most of the probe is [UNK]."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocabulary = {"[UNK]": 0, **{f"x{i}": i + 1 for i in range(319)}}
    backend = Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    with pytest.raises(ModelFileError, match=r"of the \d+ tokens of an ordinary sentence are \[UNK\]"):
        check_vocabulary(tokenizer, make_model("bert"), "elsewhere")
