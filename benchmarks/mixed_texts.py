"""Heal texts mixed from two sources: passages of a BEIR corpus and short generic texts, as one text file.

    python benchmarks/mixed_texts.py --model minilm-l6 --corpus ../shared/data/SciFact --passages 2000 \
        --generic /tmp/generic.txt --count 2000 --seed 0 --output /tmp/mixed.txt

The corpus is split into passages of the model's length exactly as `layerpick heal --fit-texts FOLDER` splits it
(`healing.texts.corpus_passages`, the model's tokenizer and max_seq_length); a seeded sample of `--passages` of
them and of `--count` lines of `--generic` (made by generic_texts.py) are written shuffled, one per line (newlines
folded to spaces), for `layerpick heal --fit-texts`. Measures whether a heal on the corpus and on short texts
together keeps both retrieval and the short-text tasks (benchmarks/results/heal_mixed.md).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from layerpick.healing.texts import corpus_passages


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
    parser.add_argument("--generic", type=Path, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    generic = args.generic.read_text(encoding="utf-8").splitlines()
    texts = corpus_sample(args.model, args.corpus, args.passages, args.seed)
    texts += random.Random(args.seed).sample(generic, min(args.count, len(generic)))
    random.Random(args.seed + 1).shuffle(texts)
    args.output.write_text("\n".join(" ".join(text.split()) for text in texts) + "\n", encoding="utf-8")
    print(f"{args.output}: {len(texts)} texts")


if __name__ == "__main__":
    main()
