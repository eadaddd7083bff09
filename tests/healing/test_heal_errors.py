"""Bad heal requests through the `layerpick` entry point: one line, exit code 1, nothing written."""

from __future__ import annotations

import pytest

from layerpick._util import interrupt
from layerpick.cli import app as cli_app


@pytest.fixture
def layerpick(capsys):
    def run(*argv):
        capsys.readouterr()  # what fixtures printed while they were built
        interrupt.reset()
        try:
            code = cli_app.run([str(arg) for arg in argv])
        finally:
            interrupt.reset()
        return code, capsys.readouterr().err.strip()

    return run


@pytest.mark.parametrize(
    "layer, message",
    [
        (0, "layer 0 is out of range"),
        (4, "layer 4 is out of range: a heal trains a cut that keeps K of this model's 4 blocks"),
        (9, "layer 9 is out of range: a heal trains a cut that keeps K of this model's 4 blocks"),
    ],
)
def test_layer_out_of_range(layerpick, tiny_dirs, tmp_path, heal_texts, layer, message, monkeypatch):
    monkeypatch.setattr("layerpick.healing.job.build_cut", lambda *a: pytest.fail("the model was loaded"))
    out = tmp_path / "out"
    code, err = layerpick("heal", tiny_dirs("llama"), "--layer", layer, "--fit-texts", heal_texts, "-o", out, "-q")
    assert code == 1 and err.startswith(f"layerpick: error: {message}") and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("request_", [("--layer", 1), ("--layers", "1,2,3")], ids=["layer", "layers"])
def test_an_architecture_layerpick_does_not_cut_is_refused_before_loading(
    layerpick, tmp_path, heal_texts, request_, monkeypatch
):
    from tests.testkit.faults import t5_model

    monkeypatch.setattr("layerpick.healing.job.build_cut", lambda *a: pytest.fail("the model was loaded"))
    model = t5_model(tmp_path / "t5")  # one block: --layers 1,2,3 was "out of range" before the architecture
    code, err = layerpick("heal", model, *request_, "--fit-texts", heal_texts, "-o", tmp_path / "out", "-q")
    assert code == 1 and len(err.splitlines()) == 1
    assert err.startswith("layerpick: error: unsupported architecture 't5'")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t5"]


def test_too_few_texts(layerpick, tiny_dirs, tmp_path):
    texts = tmp_path / "few.txt"
    texts.write_text("\n".join(f"text number {i}" for i in range(60)), encoding="utf-8")
    out = tmp_path / "out"
    code, err = layerpick("heal", tiny_dirs("llama"), "--layer", 1, "--fit-texts", texts, "-o", out, "-q")
    assert code == 1 and "too few texts to heal: 60" in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["few.txt"]


def test_unknown_model(layerpick, tmp_path, heal_texts):
    code, err = layerpick("heal", "smollm9", "--layer", 1, "--fit-texts", heal_texts, "-o", tmp_path / "o", "-q")
    assert code == 1 and "unknown model alias 'smollm9'" in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_missing_model_path(layerpick, tmp_path, heal_texts):
    code, err = layerpick("heal", tmp_path / "nope", "--layer", 1, "--fit-texts", heal_texts, "-o", tmp_path / "o")
    assert code == 1 and "model path not found" in err
    assert list(tmp_path.iterdir()) == []


def test_missing_fit_texts(layerpick, tiny_dirs, tmp_path):
    code, err = layerpick(
        "heal", tiny_dirs("llama"), "--layer", 1, "--fit-texts", tmp_path / "no.txt", "-o", tmp_path / "o"
    )
    assert code == 1 and err == f"layerpick: error: --fit-texts: calibration file not found: {tmp_path / 'no.txt'}"
    assert list(tmp_path.iterdir()) == []


def test_a_foreign_output_is_not_replaced(layerpick, tiny_dirs, tmp_path, heal_texts):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    code, err = layerpick("heal", tiny_dirs("llama"), "--layer", 1, "--fit-texts", heal_texts, "-o", out, "--overwrite")
    assert code == 1 and "holds no earlier layerpick export" in err
    assert [p.name for p in tmp_path.iterdir()] == ["mine"] and (out / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--pooling", "median", "median"),
        ("--loss", "kl", "unknown loss 'kl'"),
        ("--held-out", "0", "--held-out must be between 0 and 1"),
        ("--epochs", "0", "--epochs must be at least 1 (got 0)"),
        ("--checkpoint-minutes", "-1", "--checkpoint-minutes must be 0 or more, not -1"),
        ("--dtype", "bfloat16", "heal trains float32 weights"),
    ],
)
def test_bad_settings(layerpick, tiny_dirs, tmp_path, heal_texts, option, value, message):
    out = tmp_path / "out"
    code, err = layerpick("heal", tiny_dirs("llama"), "-k", 1, "--fit-texts", heal_texts, "-o", out, option, value)
    assert code == 1 and message in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_missing_source_beside_a_corpus_is_refused_before_loading(layerpick, tiny_dirs, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "corpus.jsonl").write_text('{"_id": "1", "text": "a document"}\n', encoding="utf-8")
    missing = tmp_path / "no.txt"
    code, err = layerpick(
        "heal", tiny_dirs("llama"), "--layer", 1, "--fit-texts", corpus, "--fit-texts", missing, "-o", tmp_path / "o"
    )
    assert code == 1 and err == f"layerpick: error: --fit-texts: calibration file not found: {missing}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus"]


def test_a_heal_that_cannot_fit_in_memory_stops_before_the_teacher(
    layerpick, tiny_dirs, tmp_path, heal_texts, monkeypatch
):
    from layerpick.healing import memory, teacher

    monkeypatch.setattr(memory, "free_bytes", lambda device: 1000)
    monkeypatch.setattr(teacher, "teacher_vectors", lambda *a, **k: pytest.fail("the teacher's pass ran"))
    out = tmp_path / "out"
    code, err = layerpick("heal", tiny_dirs("llama"), "--layer", 1, "--fit-texts", heal_texts, "-o", out, "-q")
    assert code == 1 and len(err.splitlines()) == 1
    assert "at --batch-size 64 needs at least" in err and "not even a batch of one text leaves" in err
    assert list(tmp_path.iterdir()) == []


def test_a_text_source_named_twice_is_refused(layerpick, tiny_dirs, tmp_path, heal_texts, monkeypatch):
    monkeypatch.chdir(heal_texts.parent)
    out = tmp_path / "out"
    code, err = layerpick(
        "heal", tiny_dirs("llama"), "-k", 1, "--fit-texts", heal_texts, "--fit-texts", f"./{heal_texts.name}", "-o", out
    )
    assert code == 1 and err == f"layerpick: error: --fit-texts names {heal_texts} more than once"
    assert list(tmp_path.iterdir()) == []


def test_a_file_given_as_the_model_is_named_so(layerpick, tmp_path, heal_texts):
    code, err = layerpick("heal", heal_texts, "--layer", 1, "--fit-texts", heal_texts, "-o", tmp_path / "o")
    assert (
        code == 1
        and err == f"layerpick: error: model path is a file, not a model folder (or a .gguf file): {heal_texts}"
    )
    assert list(tmp_path.iterdir()) == []
