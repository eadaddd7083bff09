"""Whether a loaded tokenizer is the model's vocabulary at all: the check every model load makes (`models.load_model`).

A model folder whose vocabulary files were left out (a BERT without tokenizer.json and vocab.txt) still loads:
transformers builds a tokenizer from tokenizer_config.json alone that knows only its special tokens and reads every
word as [UNK]. Everything downstream then runs and succeeds on constant inputs (an export's parity check passes;
two unrelated sentences get a cosine near 1). `check_vocabulary` refuses such a tokenizer in one line that names the
vocabulary files the tokenizer's class reads and which of them the folder lacks: one much smaller than the model's
embedding matrix, or one that reads most words of ordinary English as its unknown token.
"""

from __future__ import annotations

from pathlib import Path

from layerpick.errors import ModelFileError

# Ordinary text every real vocabulary tokenizes into known pieces (subwords, bytes or characters).
PROBE = "The quick brown fox jumps over the lazy dog, and the river runs past the old mill near the town."
MAX_UNKNOWN_SHARE = 0.5  # more than half of the probe's tokens unknown: not this model's vocabulary
# A tokenizer below a quarter of the embedding rows: real models pad their matrix by a few percent at most
# (Qwen2.5: 151,665 tokens for 151,936 rows; Pythia: 50,277 for 50,304); a vocabulary left out leaves a handful.
MIN_ROWS_SHARE = 0.25


def check_vocabulary(tokenizer, model, source: str) -> None:
    """Raise ModelFileError when `tokenizer` cannot be `model`'s (loaded from `source`): see the module docstring."""
    size, rows = len(tokenizer), embedding_rows(model)
    unknown, count = unknown_tokens(tokenizer)
    small = rows is not None and size < MIN_ROWS_SHARE * rows
    unreadable = count > 0 and unknown > MAX_UNKNOWN_SHARE * count
    if not (small or unreadable):
        return
    facts = []
    if small:
        facts.append(f"{size:,} tokens for the model's {rows:,} embedding rows")
    if unreadable:
        facts.append(f"{unknown} of the {count} tokens of an ordinary sentence are {tokenizer.unk_token}")
    raise ModelFileError(
        f"cannot load model {source}: its tokenizer has {' and '.join(facts)}: {missing(tokenizer, source)}"
    )


def embedding_rows(model) -> int | None:
    """The rows of the model's input embedding matrix (None when it has none that says)."""
    try:
        embeddings = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        return None
    rows = getattr(embeddings, "num_embeddings", None)
    return rows if isinstance(rows, int) and rows > 0 else None


def unknown_tokens(tokenizer) -> tuple[int, int]:
    """(unknown tokens, tokens) of PROBE; (0, 0) for a tokenizer without an unknown token (byte-level ones)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None:
        return 0, 0
    ids = tokenizer(PROBE, add_special_tokens=False)["input_ids"]
    return sum(token == unk for token in ids), len(ids)


def missing(tokenizer, source: str) -> str:
    """What the message says of the vocabulary files: those the tokenizer's class reads that `source` lacks."""
    names = [name for name in dict.fromkeys((getattr(tokenizer, "vocab_files_names", None) or {}).values()) if name]
    folder = Path(source)
    if not names:
        return "its vocabulary files are missing or do not belong to this model"
    if folder.is_dir():
        absent = [name for name in names if not (folder / name).is_file()]
        if absent:
            return f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} missing from {source}"
    return f"its vocabulary files ({', '.join(names)}) do not belong to this model"
