"""Heal texts mixed from a BEIR corpus: its passages, and short texts (the corpus's own sentences, or generic texts),
as one text file.

    python benchmarks/mixed_texts.py --model minilm-l6 --corpus ../shared/data/SciFact --passages 2000 \
        --generic $WORK/generic.txt --count 2000 --seed 0 --output $WORK/mixed.txt
    python benchmarks/mixed_texts.py --model minilm-l6 --corpus ../shared/data/SciFact --passages 2000 \
        --sentences 2000 --seed 0 --output $WORK/mixed-sentences.txt

The corpus is split into passages of the model's length exactly as `layerpick heal --fit-texts FOLDER` splits it
(`healing.texts.corpus_passages`, the model's tokenizer and max_seq_length). A seeded sample of `--passages` of
them, of `--count` lines of `--generic` (made by generic_texts.py) and of `--sentences` sentences of the corpus's
documents (`healing.texts.corpus_sentences`, as a heal on the folder takes them beside its passages) is written
shuffled, one per line (newlines folded to spaces), for `layerpick heal --fit-texts`. Measures whether a heal on
long and short texts together keeps both retrieval and the short-text tasks (benchmarks/results/heal.md);
the corpus's sentences are short texts a user has without any other source.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from layerpick.healing.texts import corpus_passages, corpus_sentences, read_documents


def corpus_sample(model: str, corpus: Path, count: int, seed: int) -> list[str]:
    from sentence_transformers import SentenceTransformer

    from layerpick.core import registry

    folder = registry.resolve_alias(model)[1].directory if registry.get_entry(model) else Path(model)
    encoder = SentenceTransformer(str(folder), device="cpu")
    passages = corpus_passages(corpus, encoder.tokenizer, encoder.max_seq_length).texts
    return random.Random(seed).sample(passages, min(count, len(passages)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--passages", type=int, required=True)
    parser.add_argument("--generic", type=Path)
    parser.add_argument("--count", type=int, default=0, help="lines of --generic")
    parser.add_argument("--sentences", type=int, default=0, help="sentences of the corpus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    if args.count and args.generic is None:
        parser.error("--count needs --generic")
    texts = corpus_sample(args.model, args.corpus, args.passages, args.seed)
    if args.count:
        generic = args.generic.read_text(encoding="utf-8").splitlines()
        texts += random.Random(args.seed).sample(generic, min(args.count, len(generic)))
    texts += corpus_sentences(read_documents(args.corpus), args.sentences, args.seed)
    random.Random(args.seed + 1).shuffle(texts)
    args.output.write_text("\n".join(" ".join(text.split()) for text in texts) + "\n", encoding="utf-8")
    print(f"{args.output}: {len(texts)} texts")


if __name__ == "__main__":
    main()
