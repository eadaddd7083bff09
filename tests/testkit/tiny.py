"""Tiny random models of every supported family, and an offline tokenizer, built from code."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import torch
import transformers as tf
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

from layerpick.core import surgery
from layerpick.core.models import LoadedModel

TRAINING_TEXT = [
    "the quick brown fox jumps over the lazy dog",
    "layer selection finds the best intermediate representation",
    "a model cut after k blocks is faster to serve",
    "embeddings of sentences, questions and answers",
    "numbers like 42 and 3.14 appear in text too",
]
VOCAB = 320
HIDDEN = 32
LAYERS = 4
MAX_PARAMS = 150_000

COMMON = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=4)
CONFIGS = {
    "llama": lambda: tf.LlamaConfig(**COMMON, intermediate_size=64, num_key_value_heads=2, max_position_embeddings=128),
    "qwen2": lambda: tf.Qwen2Config(**COMMON, intermediate_size=64, num_key_value_heads=2, max_window_layers=3),
    "qwen3": lambda: tf.Qwen3Config(**COMMON, intermediate_size=64, num_key_value_heads=2, head_dim=8),
    "mistral": lambda: tf.MistralConfig(**COMMON, intermediate_size=64, num_key_value_heads=2, sliding_window=4),
    "gemma3": lambda: tf.Gemma3TextConfig(
        **COMMON, intermediate_size=64, num_key_value_heads=2, head_dim=8, sliding_window=4, max_position_embeddings=128
    ),
    "gpt-neox": lambda: tf.GPTNeoXConfig(**COMMON, intermediate_size=64, max_position_embeddings=128),
    "gpt2": lambda: tf.GPT2Config(
        vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=4, n_positions=128, bos_token_id=2, eos_token_id=3
    ),
    "bert": lambda: tf.BertConfig(**COMMON, intermediate_size=64, max_position_embeddings=128),
    "roberta": lambda: tf.RobertaConfig(**COMMON, intermediate_size=64, max_position_embeddings=130, pad_token_id=1),
    "xlm-roberta": lambda: tf.XLMRobertaConfig(
        **COMMON, intermediate_size=64, max_position_embeddings=130, pad_token_id=1
    ),
    "mpnet": lambda: tf.MPNetConfig(**COMMON, intermediate_size=64, max_position_embeddings=130, pad_token_id=1),
    "mamba": lambda: tf.MambaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, state_size=4),
}
ENCODERS = {"bert", "roberta", "xlm-roberta", "mpnet"}


@lru_cache(maxsize=None)
def tokenizer_object(encoder: bool) -> Tokenizer:
    """A small BPE tokenizer trained here on a few sentences (no download)."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] if encoder else ["<pad>", "<unk>", "<s>", "</s>"]
    tok = Tokenizer(models.BPE(unk_token=specials[1]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB - 20,
        special_tokens=specials,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    if encoder:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
        )
    return tok


def make_tokenizer(family: str):
    encoder = family in ENCODERS
    specials = (
        dict(pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]")
        if encoder
        else dict(pad_token="<pad>", unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    )
    fresh = Tokenizer.from_str(tokenizer_object(encoder).to_str())
    tokenizer = tf.PreTrainedTokenizerFast(tokenizer_object=fresh, **specials)
    tokenizer.padding_side = "right"
    return tokenizer


def make_model(family: str, seed: int = 0):
    config = CONFIGS[family]()
    torch.manual_seed(seed)
    model = tf.AutoModel.from_config(config).eval()
    model.requires_grad_(False)
    return model


def make_loaded(family: str, seed: int = 0) -> LoadedModel:
    model = make_model(family, seed)
    return LoadedModel(model, make_tokenizer(family), f"tiny-{family}", "", None, surgery.family_for(model))


def parameter_count(model) -> int:
    return sum(p.numel() for p in model.parameters())


TEXTS = [
    "the quick brown fox",
    "a model cut after k blocks is faster to serve, and embeddings of sentences stay the same",
    "numbers like 42",
    "layer selection",
    "questions and answers about the lazy dog jumps",
]


def save_tiny(family: str, directory, seed: int = 0):
    """Save a tiny model and its tokenizer as a local model directory (safetensors); returns the path."""
    model = make_model(family, seed)
    model.save_pretrained(directory, safe_serialization=True)
    make_tokenizer(family).save_pretrained(directory)
    return directory


def tiny_sources(folder: Path):
    """(family, directory) for every tiny family, saved under `folder` once (kept between runs)."""
    for family in sorted(CONFIGS):
        path = Path(folder) / family
        if not (path / "config.json").is_file():
            save_tiny(family, path)
        yield family, path
