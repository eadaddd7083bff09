"""The unlabelled texts a heal trains on and the share it holds back: read, split into passages, sampled, split.

Sources are those of `--fit-texts` everywhere (`core.fit_texts`: a text file, JSONL with a `text` field, a task
folder, or the embedded calibration set), except a BEIR-layout folder (one with corpus.jsonl), whose documents
(title and text) are split into passages of the model's length rather than read whole, and joined by as many of
their sentences (short texts of the same domain, which queries and short-text tasks need). Several sources are
pooled (deduplicated, in order) before the sample and the split. Too few texts are refused; fewer than the evidence asks
for are warned about.
"""

from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass
from pathlib import Path

from layerpick._util.jsonl import JsonlError, read_objects
from layerpick.core.calibration import CalibrationSet, clean
from layerpick.core.fit_texts import load_fit_texts
from layerpick.errors import CalibrationError

logger = logging.getLogger(__name__)

MIN_HELD_OUT = 50  # held-out texts below which the 10-neighbour fidelity says little
MIN_TRAIN = 50
MIN_TEXTS = MIN_HELD_OUT + MIN_TRAIN
# minilm-l6 at 3 of 6 layers, started from spread blocks, kept 93% of its SciFact nDCG@10 healed 2 epochs on 900
# passages of the corpus and 97% healed 3 epochs on 4,000; 56-58% healed (benchmarks/results/heal.md, every heal)
# from the first blocks on 18,000 generic short texts. Between 900 and 4,000 passages is not measured.
ENOUGH_TEXTS = 2000
CORPUS_FILE = "corpus.jsonl"
# A corpus's sentences beside its passages: minilm-l6 healed at 3 of 6 layers on 2,000 SciFact passages and 2,000
# of the corpus's sentences kept 96.2% of its nine-task mean (97.7% of SciFact as a query encoder), against 95.5%
# (96.1%) from 4,000 passages (heal.md#which-corpus-texts-passages-and-sentences): short texts of the same domain.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
MIN_SENTENCE_WORDS = 4


class HealTextsError(CalibrationError):
    """Texts a heal cannot train on (too few, unreadable)."""


@dataclass(frozen=True)
class HealTexts:
    """The texts of one heal: all of them (their source, count and hash), and the train and held-out shares."""

    texts: CalibrationSet
    train: tuple[str, ...]
    held_out: tuple[str, ...]
    passages: bool = False  # a BEIR corpus split into passages (and joined by its sentences)
    parts: tuple[dict, ...] = ()  # with several sources: each one's source and count, before the pooling

    def describe(self) -> dict:
        described = {
            **self.texts.describe(),
            "train": len(self.train),
            "held_out": len(self.held_out),
            "passages": self.passages,
        }
        return {**described, "sources": list(self.parts)} if len(self.parts) > 1 else described


def sources(fit_texts: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """A heal's `fit_texts` as a tuple of sources (empty: the embedded calibration set)."""
    if fit_texts is None:
        return ()
    return (fit_texts,) if isinstance(fit_texts, str) else tuple(fit_texts)


def is_corpus_folder(source: str | None) -> bool:
    return source is not None and (Path(source).expanduser() / CORPUS_FILE).is_file()


def prepare_texts(
    fit_texts: str | tuple[str, ...] | None,
    tokenizer,
    max_tokens: int,
    *,
    held_out: float,
    max_texts: int | None,
    seed: int,
    field: str | None = None,
) -> HealTexts:
    """The texts of every source in `fit_texts` (a BEIR folder's corpus in passages of at most `max_tokens` tokens
    of `tokenizer`), pooled, at most `max_texts` of them (a seeded sample), split into train and held-out shares."""
    names = sources(fit_texts)
    read = [source_texts(source, tokenizer, max_tokens, field, seed) for source in names or (None,)]
    texts = sample(pool(read), max_texts, seed)
    train, held = split(texts.texts, held_out, seed)
    passages = any(is_corpus_folder(source) for source in names)
    warn_if_thin(len(texts.texts), texts.source)
    warn_if_long(texts.texts, tokenizer, max_tokens, passages)
    parts = tuple({"source": part.source, "count": len(part.texts)} for part in read)
    return HealTexts(texts, train, held, passages, parts)


def source_texts(source: str | None, tokenizer, max_tokens: int, field: str | None, seed: int = 0) -> CalibrationSet:
    """One source's texts: a BEIR folder's corpus in passages and sentences, anything else read whole."""
    if is_corpus_folder(source):
        folder = Path(source).expanduser()
        documents = read_documents(folder)
        passages = corpus_passages(folder, tokenizer, max_tokens, documents)
        sentences = corpus_sentences(documents, len(passages.texts), seed)
        room = _room(tokenizer, max_tokens)
        sentences = [piece for sentence in sentences for piece in split_passages(sentence, tokenizer, room)]
        return CalibrationSet(clean(passages.texts + sentences), passages.source)
    return read_texts(source, field)


def read_all(fit_texts: str | tuple[str, ...] | None, field: str | None = None) -> CalibrationSet:
    """Every source's texts read whole and pooled (the count checked before a model loads, with no corpus)."""
    return pool([read_texts(source, field) for source in sources(fit_texts) or (None,)])


def pool(parts: list[CalibrationSet]) -> CalibrationSet:
    """The texts of several sources as one set, each text once (the first source's order first)."""
    if len(parts) == 1:
        return parts[0]
    texts = list(dict.fromkeys(text for part in parts for text in part.texts))
    fields = {part.field for part in parts} - {None}
    return CalibrationSet(texts, " + ".join(part.source for part in parts), fields.pop() if len(fields) == 1 else None)


def read_texts(source: str | None, field: str | None = None) -> CalibrationSet:
    """Every text of `source` (None: the embedded calibration set; JSONL from `field`), cleaned and deduplicated."""
    return load_fit_texts(source, field=field, limit=None)


def corpus_passages(folder: Path, tokenizer, max_tokens: int, documents: list[str] | None = None) -> CalibrationSet:
    """The documents of `folder`/corpus.jsonl (title, then text; `documents` when already read), each split into
    passages of `max_tokens`."""
    documents = read_documents(folder) if documents is None else documents
    room = _room(tokenizer, max_tokens)
    texts = clean([passage for document in documents for passage in split_passages(document, tokenizer, room)])
    if not texts:
        raise HealTextsError(f"--fit-texts: {folder / CORPUS_FILE} contains no texts")
    return CalibrationSet(texts, str(folder))


def _room(tokenizer, max_tokens: int) -> int:
    """The tokens a passage may have: the model's length less the special tokens the tokenizer adds."""
    return max(max_tokens - tokenizer.num_special_tokens_to_add(), 1)


def read_documents(folder: Path) -> list[str]:
    """The documents of `folder`/corpus.jsonl, each its title then its text, cleaned."""
    try:
        rows = [row for _, row in read_objects(folder / CORPUS_FILE)]
    except JsonlError as error:
        raise HealTextsError(f"--fit-texts: {error}") from None
    return clean([" ".join(str(row.get(key) or "") for key in ("title", "text")) for row in rows])


def corpus_sentences(documents: list[str], count: int, seed: int) -> list[str]:
    """A seeded sample of `count` distinct sentences of `documents` (cut at a full stop, question or exclamation
    mark before a capital; at least MIN_SENTENCE_WORDS words), in a fixed order."""
    pieces = {" ".join(piece.split()) for document in documents for piece in SENTENCE_END.split(document)}
    sentences = sorted(piece for piece in pieces if len(piece.split()) >= MIN_SENTENCE_WORDS)
    return random.Random(seed).sample(sentences, min(count, len(sentences)))


def split_passages(text: str, tokenizer, room: int) -> list[str]:
    """`text` cut into consecutive pieces of at most `room` tokens, at token boundaries (character offsets of a
    fast tokenizer); a piece that tokenizes longer on its own (a word cut in two) is cut again. A slow tokenizer
    keeps the text whole (the model truncates it)."""
    if not getattr(tokenizer, "is_fast", False):
        return [text]
    offsets = _offsets(text, tokenizer)
    if len(offsets) <= room:
        return [text]
    bounds = [(offsets[i][0], offsets[min(i + room, len(offsets)) - 1][1]) for i in range(0, len(offsets), room)]
    pieces = [text[start:end] for start, end in bounds if end > start]
    return [part for piece in pieces for part in (split_passages(piece, tokenizer, room) if piece != text else [piece])]


def _offsets(text: str, tokenizer) -> list[tuple[int, int]]:
    return tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)["offset_mapping"]


def sample(texts: CalibrationSet, limit: int | None, seed: int) -> CalibrationSet:
    if limit is None or len(texts.texts) <= limit:
        return texts
    if limit < 1:
        raise HealTextsError(f"--max-texts must be at least 1 (got {limit})")
    keep = sorted(random.Random(seed).sample(range(len(texts.texts)), limit))
    return CalibrationSet([texts.texts[i] for i in keep], texts.source)


def split(texts: list[str], share: float, seed: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(train, held out): a seeded `share` of the texts, at least MIN_HELD_OUT, held back."""
    if not 0 < share < 1:
        raise HealTextsError(f"--held-out must be between 0 and 1 (got {share})")
    if len(texts) < MIN_TEXTS:
        raise HealTextsError(
            f"too few texts to heal: {len(texts)} (at least {MIN_TEXTS}: {MIN_HELD_OUT} held out to measure "
            f"fidelity and {MIN_TRAIN} to train; thousands are needed for a useful heal)"
        )
    count = min(max(round(share * len(texts)), MIN_HELD_OUT), len(texts) - MIN_TRAIN)
    held = set(random.Random(seed).sample(range(len(texts)), count))
    train = tuple(text for i, text in enumerate(texts) if i not in held)
    return train, tuple(texts[i] for i in sorted(held))


def warn_if_thin(count: int, source: str) -> None:
    if count < ENOUGH_TEXTS:
        logger.warning(
            "only %d texts from %s: healing has been measured to work with thousands of texts of the corpus the "
            "model will serve (minilm-l6 at 3 of 6 layers kept 93%% of its retrieval quality from 900 passages "
            "and 97%% from 4,000); expect less below %d",
            count,
            source,
            ENOUGH_TEXTS,
        )


def warn_if_long(texts: list[str], tokenizer, max_tokens: int, passages: bool = False) -> None:
    """A warning naming how many texts the model will truncate (a BEIR folder is split instead)."""
    lengths = [len(ids) for ids in tokenizer(list(texts), add_special_tokens=True, verbose=False)["input_ids"]]
    longer = sum(length > max_tokens for length in lengths)
    if longer:
        hint = "" if passages else "; pass a BEIR folder (corpus.jsonl) to split documents into passages instead"
        logger.warning(
            "%d of %d texts are longer than the model's %d tokens and are truncated in training%s",
            longer,
            len(texts),
            max_tokens,
            hint,
        )
