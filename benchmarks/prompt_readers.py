"""Does every tokenizer reader apply a prompted export's template by itself, and keep its end when truncating?

A prompted export carries its template in tokenizer.json (a TemplateProcessing post-processor) and names the
generic fast tokenizer class. Three steps, run by prompt_readers.sh in two environments:

  export WORK  (project venv) export tiny models of every family (and the packaged real models with --real)
               with the eol template, and write the token ids the project's own readers give for a few texts
               (sentence-transformers' tokenize, transformers 5 AutoTokenizer, the Rust tokenizers library that
               TEI runs) to WORK/reference.json
  check WORK   (a venv with only transformers 4.x, what vLLM and infinity deployments commonly run) load every
               export with AutoTokenizer and print one JSON line per export: same ids?, suffix kept?; then the
               same directory with its original tokenizer class put back, to show why the generic class is named
  report WORK  turn WORK/results.jsonl into the markdown table of benchmarks/results/prompt_readers.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = [("minilm-l6", 6), ("smollm2-135m", 29), ("gemma3-270m", 16)]
TEXTS = ["The cat sat on the mat.", "Hello!", "word " * 3000]  # the last is truncated at max_seq_length


def export_all(work: Path, real: bool) -> None:
    import transformers
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    from layerpick.core import registry
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model

    jobs = [(f"tiny-{family}", str(path), 2) for family, path in _tiny_sources(work)]
    if real:
        jobs += [(alias, alias, k) for alias, k in REAL if registry.ENTRIES[alias].is_installed()]
    reference = {}
    for name, source, k in jobs:
        out = work / "exports" / name
        export_model(source, k, out, ExportConfig(prompt="eol", overwrite=True, progress=False))
        model = SentenceTransformer(str(out), device="cpu")
        rust = Tokenizer.from_file(str(out / "tokenizer.json"))
        rust.enable_truncation(model.max_seq_length)
        hf = AutoTokenizer.from_pretrained(out)
        original = json.loads((Path(_source_dir(source)) / "tokenizer_config.json").read_text()).get("tokenizer_class")
        reference[name] = {
            "max_seq_length": model.max_seq_length,
            "original_class": original,
            "sentence_transformers": [model.tokenize([t])["input_ids"][0].tolist() for t in TEXTS],
            "transformers": [hf(t, truncation=True, max_length=model.max_seq_length)["input_ids"] for t in TEXTS],
            "rust_tokenizers": [rust.encode(t).ids for t in TEXTS],
        }
        if original and original not in ("PreTrainedTokenizerFast", "TokenizersBackend"):
            restored = AutoTokenizer.from_pretrained(_with_class(out, work / "class-restored-5" / name, original))
            reference[name]["class_restored"] = {
                "reader": f"transformers {transformers.__version__}",
                "class": type(restored).__name__,
                "ids": [restored(t, truncation=True, max_length=model.max_seq_length)["input_ids"] for t in TEXTS],
            }
        print(f"exported {name}", flush=True)
    (work / "reference.json").write_text(json.dumps(reference))


def _with_class(directory: Path, copy: Path, tokenizer_class: str) -> Path:
    """A copy of an export whose tokenizer_config.json names `tokenizer_class`."""
    import shutil

    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(directory, copy)
    config = json.loads((copy / "tokenizer_config.json").read_text())
    config["tokenizer_class"] = tokenizer_class
    (copy / "tokenizer_config.json").write_text(json.dumps(config))
    return copy


def _source_dir(source: str) -> str:
    from layerpick.core.models import LoadOptions, _resolve_source

    path, gguf, _ = _resolve_source(source, LoadOptions())
    if gguf:
        from layerpick.core.gguf_cache import converted_gguf_dir

        path = str(converted_gguf_dir(Path(path), gguf))
    return path


def _tiny_sources(work: Path):
    sys.path.insert(0, str(ROOT))
    from tests.testkit.tiny import tiny_sources

    return tiny_sources(work / "tiny-sources")


def check_all(work: Path) -> None:
    import transformers
    from transformers import AutoTokenizer

    reference = json.loads((work / "reference.json").read_text())
    lines = []
    for name, ref in reference.items():
        directory = work / "exports" / name
        tokenizer = AutoTokenizer.from_pretrained(directory)
        ids = [tokenizer(t, truncation=True, max_length=ref["max_seq_length"])["input_ids"] for t in TEXTS]
        expected = ref["sentence_transformers"]
        suffix = expected[0][-3:]
        record = {
            "export": name,
            "reader": f"transformers {transformers.__version__}",
            "class": type(tokenizer).__name__,
            "same_ids": ids == expected,
            "suffix_kept": ids[2][-3:] == suffix and len(ids[2]) == ref["max_seq_length"],
            "project_readers_agree": ref["transformers"] == expected and ref["rust_tokenizers"] == expected,
        }
        lines.append(record)
        original = ref["original_class"]
        if "class_restored" in ref:
            earlier = ref["class_restored"]
            lines.append(
                {
                    **record,
                    "export": f"{name} with tokenizer_class {original}",
                    "reader": earlier["reader"],
                    "class": earlier["class"],
                    "same_ids": earlier["ids"] == expected,
                    "suffix_kept": earlier["ids"][2][-3:] == suffix,
                    "project_readers_agree": None,
                }
            )
        if original and original not in ("PreTrainedTokenizerFast", "TokenizersBackend"):
            restored = AutoTokenizer.from_pretrained(_with_class(directory, work / "class-restored" / name, original))
            again = [restored(t, truncation=True, max_length=ref["max_seq_length"])["input_ids"] for t in TEXTS]
            lines.append(
                {
                    **record,
                    "export": f"{name} with tokenizer_class {original}",
                    "class": type(restored).__name__,
                    "same_ids": again == expected,
                    "suffix_kept": again[2][-3:] == suffix,
                    "project_readers_agree": None,
                }
            )
    (work / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    for line in lines:
        print(json.dumps(line))


def report(work: Path) -> str:
    rows = [json.loads(line) for line in (work / "results.jsonl").read_text().splitlines()]
    reference = json.loads((work / "reference.json").read_text())
    lines = [
        "| export | reader | class loaded | same ids as sentence-transformers | suffix kept when truncated |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['export']} | {row['reader']} | {row['class']} | {_yes(row['same_ids'])} | "
            f"{_yes(row['suffix_kept'])} |"
        )
    agree = all(
        ref["transformers"] == ref["sentence_transformers"] == ref["rust_tokenizers"] for ref in reference.values()
    )
    return "\n".join(lines) + (
        "\n\nIn the project's own environment, sentence-transformers, transformers 5's "
        "AutoTokenizer and the Rust `tokenizers` library reading tokenizer.json give the same "
        f"ids for every export: {_yes(agree)}.\n"
    )


def _yes(value) -> str:
    return "–" if value is None else ("yes" if value else "**no**")


if __name__ == "__main__":
    step, work = sys.argv[1], Path(sys.argv[2])
    if step == "export":
        export_all(work, "--real" in sys.argv)
    elif step == "check":
        check_all(work)
    else:
        print(report(work), end="")
