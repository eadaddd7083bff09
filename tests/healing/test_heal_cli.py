"""`layerpick heal` end to end on a tiny sentence embedder: the full model's own pipeline is the teacher, the
command prints the fidelity before and after, and the healed export keeps the pipeline (Normalize, prompt)."""

from __future__ import annotations

import os

import numpy as np

from layerpick._util import interrupt
from layerpick.cli import app as cli_app
from layerpick.exporting.metadata import read_metadata


def run_heal(*argv: str) -> int:
    """`layerpick heal ARGV` in this process, with the interrupt handling reset around it."""
    interrupt.reset()
    try:
        return cli_app.run(["heal", *argv])
    finally:
        interrupt.reset()


def test_heal_a_sentence_embedder(tiny_embedder, heal_texts, tmp_path, capsys):
    from sentence_transformers import SentenceTransformer

    output = tmp_path / "healed"
    argv = [str(tiny_embedder), "--layer", "2", "--fit-texts", str(heal_texts), "--epochs", "1"]
    code = run_heal(*argv, "--batch-size", "16", "--output", str(output), "-q")
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert f"healed {output}" in printed.out and "cosine to the teacher" in printed.out
    metadata = read_metadata(output)
    assert metadata.heal["teacher"]["kind"] == "sentence-transformers" and metadata.normalize
    assert metadata.heal["command"].startswith(f"layerpick heal {tiny_embedder} --layer 2")
    model = SentenceTransformer(str(output), device="cpu")
    assert model.default_prompt_name == "query"
    # atol 1e-5: unit norm of float32 vectors, float32 rounding
    assert np.allclose(np.linalg.norm(model.encode(["a text", "another one"]), axis=1), 1.0, atol=1e-5)


def test_heal_reads_jsonl_texts_from_the_field_named(tiny_embedder, heal_texts, tmp_path, capsys):
    import json

    lines = heal_texts.read_text(encoding="utf-8").splitlines()
    jsonl = tmp_path / "texts.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "body": text}) + "\n" for i, text in enumerate(lines)), "utf-8")
    output = tmp_path / "healed"
    argv = [str(tiny_embedder), "--layer", "1", "--fit-texts", str(jsonl), "--epochs", "1", "-q"]
    refused = run_heal(*argv, "--output", str(output))  # no `text` field in these lines
    assert "--field" in capsys.readouterr().err and not output.exists()
    code = run_heal(*argv, "--field", "body", "--batch-size", "16", "--output", str(output))
    printed = capsys.readouterr()
    assert refused == 1 and code == 0, printed.err
    heal = read_metadata(output).heal
    assert heal["texts"]["count"] == len(lines) and "--field body" in heal["command"]


def test_heal_pools_every_fit_texts_given(tiny_embedder, heal_texts, tmp_path, capsys):
    lines = heal_texts.read_text(encoding="utf-8").splitlines()
    first, second = tmp_path / "corpus.txt", tmp_path / "queries.txt"
    first.write_text("\n".join(lines[:70]), encoding="utf-8")
    second.write_text("\n".join(lines[60:]), encoding="utf-8")  # ten texts in both: pooled once
    output = tmp_path / "healed"
    argv = [str(tiny_embedder), "--layer", "1", "--fit-texts", str(first), "--fit-texts", str(second)]
    code = run_heal(*argv, "--epochs", "1", "--batch-size", "16", "--output", str(output), "-q")
    assert code == 0, capsys.readouterr().err
    heal = read_metadata(output).heal
    assert heal["texts"]["count"] == len(lines)
    assert [part["count"] for part in heal["texts"]["sources"]] == [70, len(lines) - 60]
    assert f"--fit-texts {first} --fit-texts {second}" in heal["command"]


def test_heal_reads_fit_texts_paths_with_spaces_from_the_env_var(
    tiny_embedder, heal_texts, tmp_path, capsys, monkeypatch
):
    lines = heal_texts.read_text(encoding="utf-8").splitlines()
    first, second = tmp_path / "my corpus.txt", tmp_path / "my queries.txt"
    first.write_text("\n".join(lines[:70]), encoding="utf-8")
    second.write_text("\n".join(lines[70:]), encoding="utf-8")
    monkeypatch.setenv("LAYERPICK_FIT_TEXTS", f"{first}{os.pathsep}{second}")  # as PATH: spaces are no separator
    output = tmp_path / "healed"
    code = run_heal(str(tiny_embedder), "--layer", "1", "--epochs", "1", "--output", str(output), "-q")
    assert code == 0, capsys.readouterr().err
    assert [part["source"] for part in read_metadata(output).heal["texts"]["sources"]] == [str(first), str(second)]


def test_heal_json_prints_the_exports_heal_section_and_nothing_else(tiny_embedder, heal_texts, tmp_path, capsys):
    import json

    output = tmp_path / "healed"
    code = run_heal(
        str(tiny_embedder),
        "-k",
        "1",
        "--fit-texts",
        str(heal_texts),
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--output",
        str(output),
        "--json",
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    document = json.loads(printed.out)
    assert document == read_metadata(output).heal
    assert document["format"] == "layerpick-heal/1" and document["layer"] == 1
