"""Do older sentence-transformers versions read a layerpick export and get the same embeddings?

Two steps, run by check_legacy_readers.sh in two different environments:

  export  WORK   (project venv) export real models and one tiny model per family into WORK/exports, and
                 write what the current sentence-transformers encodes into WORK/reference/NAME.json
  compare WORK   (a legacy venv; imports only sentence_transformers) load every export, encode the same
                 texts, and print one JSON line per export: max abs diff and min cosine vs the reference
  report  WORK   (any venv) turn WORK/results-*.jsonl into the markdown table of benchmarks/results/
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = [("minilm-l6", 3, True), ("smollm2-135m", 10, False), ("gemma3-270m", 9, False)]  # alias, K, normalize
# With a post-pooling transform: a `Dense` module after the pooling (and Normalize after it where asked).
TRANSFORMED = [
    ("minilm-l6", 3, True, "whiten-256"),
    ("smollm2-135m", 1, False, "whiten-256"),
    ("gemma3-270m", 9, False, "center"),
]


def export_all(work: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from layerpick.core import registry
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model
    from layerpick.exporting.parity import DEFAULT_PARITY_TEXTS

    texts = list(DEFAULT_PARITY_TEXTS)
    (work / "reference").mkdir(parents=True, exist_ok=True)
    jobs = [
        (alias, alias, k, normalize, None) for alias, k, normalize in REAL if registry.ENTRIES[alias].is_installed()
    ]
    jobs += [
        (f"{alias}-{transform}", alias, k, normalize, transform)
        for alias, k, normalize, transform in TRANSFORMED
        if registry.ENTRIES[alias].is_installed()
    ]
    jobs += [(f"tiny-{family}", str(path), 2, False, None) for family, path in _tiny_sources(work)]
    for name, source, k, normalize, transform in jobs:
        out = work / "exports" / name
        export_model(
            source, k, out, ExportConfig(normalize=normalize, transform=transform, overwrite=True, progress=False)
        )
        embeddings = SentenceTransformer(str(out), device="cpu").encode(texts, batch_size=4)
        record = {"name": name, "layer": k, "texts": texts, "embeddings": embeddings.tolist()}
        (work / "reference" / f"{name}.json").write_text(json.dumps(record))
        print(f"exported {name} (K={k})", flush=True)


def _tiny_sources(work: Path):
    sys.path.insert(0, str(ROOT))
    from tests.testkit.tiny import tiny_sources

    return tiny_sources(work / "tiny-sources")


def compare_all(work: Path) -> None:
    import numpy as np
    import sentence_transformers
    import transformers
    from sentence_transformers import SentenceTransformer

    for reference_file in sorted((work / "reference").glob("*.json")):
        record = json.loads(reference_file.read_text())
        row = {
            "reader": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "name": record["name"],
            "layer": record["layer"],
        }
        try:
            start = time.perf_counter()
            model = SentenceTransformer(str(work / "exports" / record["name"]), device="cpu")
            got = model.encode(record["texts"], batch_size=4)
            want = np.asarray(record["embeddings"], dtype=np.float32)
            cosine = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
            row |= {
                "ok": True,
                "max_abs_diff": float(np.abs(got - want).max()),
                "scale": float(np.abs(want).max()),
                "min_cosine": float(cosine.min()),
                "seconds": round(time.perf_counter() - start, 1),
            }
        except Exception as error:  # noqa: BLE001 - a reader that fails is the result
            row |= {"ok": False, "error": f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"}
        print(json.dumps(row), flush=True)


CAUGHT = """
## What this check caught (and the export now rewrites)

- `config.json` from transformers 5 holds `rope_parameters`; transformers 4 ignores it and falls back to its
  default `rope_theta`. SmolLM2 (rope_theta 100000) then drifted: max abs diff 0.238, min cosine 0.99928
  with sentence-transformers 3.4.1. The export adds `rope_theta` (and Gemma 3's `rope_local_base_freq`)
  beside `rope_parameters`; for Gemma 3 the defaults happen to equal its values, so it did not drift.
- transformers 4's generic fast tokenizer returns `token_type_ids` unless `model_input_names` says otherwise:
  GPT-2 adds them to its embeddings (tiny-gpt2: max abs diff 1.18, min cosine -0.047) and Mamba's forward
  rejects them (TypeError). The export writes the tokenizer's `model_input_names` into tokenizer_config.json.
- `tokenizer_class: TokenizersBackend` (transformers 5's generic class) does not exist in transformers 4
  ("ValueError: Tokenizer class TokenizersBackend does not exist or is not currently imported" with 3.4.1);
  the export writes `PreTrainedTokenizerFast`, which both versions load to the same tokenizer.
- sentence-transformers 2.7.0's `Dense` reads only `pytorch_model.bin` ("FileNotFoundError: ...
  2_Dense/pytorch_model.bin" for all three transformed exports, when they held `model.safetensors` alone);
  the export writes the Dense weights in both files (the same tensors), and every reader above now loads them.

Installing the reader venvs (torch 2.13.0 CPU from constraints.txt first, then sentence-transformers,
which brings transformers 4.57.6) took under 6 minutes here; the script reuses them when they exist.

Old readers print "created with Sentence Transformers version 6.2.0" warnings: the version recorded in
config_sentence_transformers.json is the one that wrote the files, kept as it is.
"""


def report(work: Path) -> None:
    import sentence_transformers
    import transformers

    print("# Legacy readers of a layerpick export\n")
    print(
        f"Made by `bash benchmarks/check_legacy_readers.sh` on {time.strftime('%Y-%m-%d', time.gmtime())}: "
        f"exports written with sentence-transformers {sentence_transformers.__version__} and transformers "
        f"{transformers.__version__}, then loaded in separate venvs (torch 2.13.0 CPU) by the readers below. "
        '8 texts of different lengths, batch size 4; "max abs diff" compares each reader\'s embeddings '
        "with the current sentence-transformers' on the same directory. Real models: minilm-l6 K=3 "
        "(normalised), smollm2-135m K=10, gemma3-270m K=9 (mean pooling); with a post-pooling transform "
        "(a `Dense` module after the pooling, fitted on the embedded calibration set): minilm-l6 K=3 "
        "whiten-256 (then Normalize), smollm2-135m K=1 whiten-256, gemma3-270m K=9 center; tiny random models "
        "of every family at K=2.\n"
    )
    print("| reader | transformers | export | K | loads | max abs diff | largest value | min cosine |")
    print("|---|---|---|---|---|---|---|---|")
    for results in sorted(work.glob("results-*.jsonl")):
        for line in results.read_text().splitlines():
            row = json.loads(line)
            head = f"| sentence-transformers {row['reader']} | {row['transformers']} | {row['name']} | {row['layer']} |"
            if row["ok"]:
                print(f"{head} yes | {row['max_abs_diff']:.2e} | {row['scale']:.3g} | {row['min_cosine']:.7f} |")
            else:
                print(f"{head} **no**: {row['error']} | | | |")
    print(CAUGHT)


if __name__ == "__main__":
    step, work = sys.argv[1], Path(sys.argv[2] if len(sys.argv) > 2 else tempfile.gettempdir())
    {"export": export_all, "compare": compare_all, "report": report}[step](work)
