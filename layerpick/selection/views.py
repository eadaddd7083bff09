"""Text augmentations used to build augmented views for invariance metrics.

This module owns the paper's character/word-level augmentations (word
splitting, random character substitution, QWERTY keyboard typos) and
``make_views``, which builds seeded, deterministic views per text. Views never
add wrapper characters around the text and never delete characters, so a
view of a non-empty text is non-empty.
"""

from __future__ import annotations

import hashlib
import random
import re
import string
from typing import Callable

DEFAULT_RATE = 0.1
_WORD = re.compile(r"\S+")
_QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _qwerty_neighbours() -> dict[str, str]:
    """Map each lowercase letter to its horizontal/vertical QWERTY neighbours."""
    where = {ch: (r, c) for r, row in enumerate(_QWERTY_ROWS) for c, ch in enumerate(row)}
    neighbours = {}
    for ch, (r, c) in where.items():
        near = [other for other, (r2, c2) in where.items() if other != ch and abs(r - r2) <= 1 and abs(c - c2) <= 1]
        neighbours[ch] = "".join(sorted(near))
    return neighbours


_NEIGHBOURS = _qwerty_neighbours()


def split_words(text: str, rng: random.Random) -> str:
    """Split one or more words (of >= 2 characters) in two with a space.

    Original whitespace is kept; text without such a word is returned as is.
    Up to about a quarter of the eligible words (at least one) are split.
    """
    spans = [m.span() for m in _WORD.finditer(text) if m.end() - m.start() >= 2]
    if not spans:
        return text
    count = rng.randint(1, max(1, len(spans) // 4))
    chosen = sorted(rng.sample(spans, count))
    pieces, cursor = [], 0
    for start, end in chosen:
        cut = rng.randint(start + 1, end - 1)
        pieces.extend([text[cursor:cut], " "])
        cursor = cut
    pieces.append(text[cursor:])
    return "".join(pieces)


def substitute_characters(text: str, rng: random.Random, rate: float = DEFAULT_RATE) -> str:
    """Replace ASCII letters with different random letters, case preserved.

    Each letter is replaced with probability ``rate``; when ``rate > 0`` at
    least one letter is replaced if the text has any.
    """
    return _replace_letters(text, rng, rate, _random_other_letter)


def keyboard_typo(text: str, rng: random.Random, rate: float = DEFAULT_RATE) -> str:
    """Replace ASCII letters with a QWERTY neighbour, case preserved.

    Each letter is replaced with probability ``rate``; when ``rate > 0`` at
    least one letter is replaced if the text has any.
    """
    return _replace_letters(text, rng, rate, _keyboard_neighbour)


_AUGMENTATIONS: tuple[Callable[[str, random.Random], str], ...] = (
    split_words,
    substitute_characters,
    keyboard_typo,
)


def make_views(texts: list[str], num_views: int, seed: int) -> list[list[str]]:
    """Build ``num_views`` augmented variants of each text.

    View ``j`` applies augmentation ``j mod 3`` (split words, substitute
    characters, keyboard typo), starting at a seeded offset per text. Each
    text gets its own ``random.Random`` seeded from ``(seed, text)``, so its
    views depend neither on the other texts nor on their order.

    Returns:
        A list of len(texts) lists, each of ``num_views`` strings.

    Raises:
        ValueError: ``num_views < 1``.
    """
    if num_views < 1:
        raise ValueError(f"num_views must be >= 1, got {num_views}")
    return [_views_of(text, num_views, seed) for text in texts]


def _views_of(text: str, num_views: int, seed: int) -> list[str]:
    """Views of one text from an rng derived from ``seed`` and the text."""
    rng = random.Random(_text_seed(text, seed))
    offset = rng.randrange(len(_AUGMENTATIONS))
    return [_AUGMENTATIONS[(offset + j) % len(_AUGMENTATIONS)](text, rng) for j in range(num_views)]


def _text_seed(text: str, seed: int) -> int:
    """Stable 64-bit seed from the global seed and the text content."""
    digest = hashlib.sha256(f"{seed}\x00{text}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def _replace_letters(text: str, rng: random.Random, rate: float, replace: Callable[[str, random.Random], str]) -> str:
    """Replace a random subset of ASCII letters using ``replace(letter, rng)``."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be in [0, 1], got {rate}")
    letters = [i for i, ch in enumerate(text) if ch in string.ascii_letters]
    if not letters:
        return text
    picked = [i for i in letters if rng.random() < rate]
    if not picked and rate > 0:
        picked = [rng.choice(letters)]
    chars = list(text)
    for i in picked:
        chars[i] = replace(chars[i], rng)
    return "".join(chars)


def _random_other_letter(letter: str, rng: random.Random) -> str:
    """A random lowercase letter other than ``letter``, in ``letter``'s case."""
    choice = rng.choice([c for c in string.ascii_lowercase if c != letter.lower()])
    return choice.upper() if letter.isupper() else choice


def _keyboard_neighbour(letter: str, rng: random.Random) -> str:
    """A QWERTY neighbour of ``letter``, in ``letter``'s case."""
    choice = rng.choice(_NEIGHBOURS[letter.lower()])
    return choice.upper() if letter.isupper() else choice
