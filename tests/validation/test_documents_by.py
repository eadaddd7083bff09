"""Asymmetric retrieval (`validate --documents-by`): a retrieval task's documents come from the named encoder, its
queries and every other task's texts from what is validated; the results are named apart and the report says so."""

import pytest
from typer.testing import CliRunner

from layerpick.cli.app import app
from layerpick.cli.errors import exit_code_for
from layerpick.validation import ValidateConfig, run_validation
from layerpick.validation.documents import DocumentsError
from tests.testkit.tasks import ALL_KINDS
from tests.testkit.tiny import LAYERS
from tests.validation.test_exported_and_cli import export_tiny


@pytest.fixture
def folders(tmp_path):
    return [str(ALL_KINDS["sts"](tmp_path)), str(ALL_KINDS["retrieval"](tmp_path))]


def scores(run, name):
    return run.report.to_json()["tasks"][name]["main_score_by_layer"]


def test_documents_by_changes_retrieval_only(tmp_path, tiny_model, folders):
    exported = export_tiny(tiny_model, tmp_path)
    common = dict(store_dir=tmp_path / "store", progress=False, layers=[1, LAYERS])
    plain = run_validation("tiny", folders, ValidateConfig(output_dir=tmp_path / "sym", **common))
    mixed = run_validation(
        "tiny", folders, ValidateConfig(output_dir=tmp_path / "asym", documents_by=str(exported), **common)
    )
    # the last layer's documents by the export of the last layer: the same vectors, so the same score
    # (abs 1e-5: scores rounded to 6 decimals, and the export's float32 pass differs from layer L's by less)
    assert scores(mixed, "retrieval")[LAYERS] == pytest.approx(scores(plain, "retrieval")[LAYERS], abs=1e-5)
    # layer 1's queries against layer L's documents: another score than layer 1 against itself
    assert abs(scores(mixed, "retrieval")[1] - scores(plain, "retrieval")[1]) > 1e-3
    assert scores(mixed, "sts") == scores(plain, "sts")  # no documents in STS: untouched
    documents = mixed.report.documents_by
    assert documents["path"] == str(exported) and documents["model"] == str(exported)
    assert plain.report.documents_by is None
    assert all("__docs-exported-" in path.name for path in (tmp_path / "asym" / "results").iterdir())


def test_a_document_encoder_of_another_width_is_refused(tmp_path, tiny_model, folders):
    exported = export_tiny(tiny_model, tmp_path)
    config = ValidateConfig(
        output_dir=tmp_path / "out", documents_by=str(exported), transform="whiten-4", progress=False, layers=[1]
    )
    with pytest.raises(DocumentsError, match="must share one vector space"):
        run_validation("tiny", folders, config)
    assert not (tmp_path / "out").exists()


def test_a_missing_document_folder_is_refused_before_loading(tmp_path, folders):
    result = CliRunner().invoke(
        app,
        ["validate", "tiny", "--tasks", folders[1], "--documents-by", "./no/such", "--output", str(tmp_path / "o")],
    )
    assert isinstance(result.exception, DocumentsError) and exit_code_for(result.exception) == 1
    assert "--documents-by: folder not found" in str(result.exception)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "kind, message",
    [("empty", "--documents-by is empty"), ("file", "is a file"), ("plain", "not a sentence-transformers model")],
)
def test_a_document_encoder_that_is_not_a_sentence_transformer_is_refused_before_loading(
    tmp_path, folders, kind, message
):
    (tmp_path / "texts.txt").write_text("a text\n")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "config.json").write_text("{}")  # a transformers folder, no sentence pipeline
    name = {"empty": "", "file": str(tmp_path / "texts.txt"), "plain": str(tmp_path / "plain")}[kind]
    result = CliRunner().invoke(
        app, ["validate", "tiny", "--tasks", folders[1], "--documents-by", name, "--output", str(tmp_path / "o")]
    )
    assert isinstance(result.exception, DocumentsError) and exit_code_for(result.exception) == 1
    assert message in str(result.exception)
    assert not (tmp_path / "o").exists()


def test_documents_by_without_a_retrieval_task_is_ignored_and_not_recorded(tmp_path, tiny_model, folders, caplog):
    exported = export_tiny(tiny_model, tmp_path)
    config = ValidateConfig(
        output_dir=tmp_path / "out",
        documents_by=str(exported),
        store_dir=tmp_path / "store",
        progress=False,
        layers=[1],
    )
    run = run_validation("tiny", folders[:1], config)  # STS only
    assert run.report.documents_by is None
    assert "none of the tasks is one: ignored" in caplog.text
    assert not any("__docs-" in path.name for path in (tmp_path / "out" / "results").iterdir())
