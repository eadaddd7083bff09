"""The local folder format: kinds detected from files and fields, and one clear error per malformed folder."""

import logging

import pytest

from layerpick.errors import LayerpickError
from layerpick.validation import TaskFormatError, read_folder, resolve_tasks
from tests.testkit.tasks import ALL_KINDS, write_jsonl


@pytest.mark.parametrize("kind", sorted(ALL_KINDS))
def test_kind_is_detected_from_files_and_fields(tmp_path, kind):
    data = read_folder(ALL_KINDS[kind](tmp_path))
    assert data.kind == kind
    assert "test" in data.splits
    assert data.revision.startswith("local-")


def test_revision_changes_with_content(tmp_path):
    folder = ALL_KINDS["sts"](tmp_path)
    before = read_folder(folder).revision
    write_jsonl(
        folder / "test.jsonl",
        [{"sentence1": "a", "sentence2": "b", "score": 1.0}, {"sentence1": "c", "sentence2": "d", "score": 2.0}],
    )
    assert read_folder(folder).revision != before


def test_errors_are_layerpick_errors():
    assert issubclass(TaskFormatError, LayerpickError)


def test_folder_matching_no_format(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hello")
    with pytest.raises(TaskFormatError, match="matches no task format"):
        resolve_tasks([str(tmp_path / "notes")])


def test_jsonl_with_unknown_fields(tmp_path):
    write_jsonl(tmp_path / "odd" / "test.jsonl", [{"question": "a", "answer": "b"}])
    with pytest.raises(TaskFormatError, match="matches no task format"):
        read_folder(tmp_path / "odd")


def test_no_test_split(tmp_path):
    write_jsonl(tmp_path / "cls" / "train.jsonl", [{"text": "a", "label": 0}])
    with pytest.raises(TaskFormatError, match="no test split"):
        read_folder(tmp_path / "cls")


def test_retrieval_without_test_qrels(tmp_path):
    folder = ALL_KINDS["retrieval"](tmp_path)
    (folder / "qrels.tsv").rename(folder / "dev.tsv")
    with pytest.raises(TaskFormatError, match="no test split"):
        read_folder(folder)


def test_classification_missing_labels(tmp_path):
    write_jsonl(tmp_path / "cls" / "test.jsonl", [{"text": "a"}])
    write_jsonl(tmp_path / "cls" / "train.jsonl", [{"text": "b", "label": 0}])
    with pytest.raises(TaskFormatError, match="no 'label'"):
        read_folder(tmp_path / "cls")


def test_label_missing_on_a_later_line(tmp_path):
    folder = ALL_KINDS["classification"](tmp_path)
    rows = [{"text": "a", "label": 0}, {"text": "b"}]
    write_jsonl(folder / "test.jsonl", rows)
    with pytest.raises(TaskFormatError, match=r"test.jsonl:2: missing 'label'"):
        read_folder(folder)


def test_pairs_without_scores_or_labels(tmp_path):
    write_jsonl(tmp_path / "p" / "test.jsonl", [{"sentence1": "a", "sentence2": "b"}])
    with pytest.raises(TaskFormatError, match="without 'score'"):
        read_folder(tmp_path / "p")


def test_sts_score_missing_on_one_line(tmp_path):
    write_jsonl(
        tmp_path / "s" / "test.jsonl",
        [{"sentence1": "a", "sentence2": "b", "score": 1}, {"sentence1": "a", "sentence2": "b", "score": None}],
    )
    with pytest.raises(TaskFormatError, match=r":2: missing 'score'"):
        read_folder(tmp_path / "s")


def test_classification_needs_train(tmp_path):
    write_jsonl(tmp_path / "cls" / "test.jsonl", [{"text": "a", "label": 0}])
    with pytest.raises(TaskFormatError, match="needs train.jsonl"):
        read_folder(tmp_path / "cls")


def test_clustering_lengths_must_match(tmp_path):
    write_jsonl(tmp_path / "c" / "test.jsonl", [{"sentences": ["a", "b"], "labels": [1]}])
    with pytest.raises(TaskFormatError, match="2 sentences but 1 labels"):
        read_folder(tmp_path / "c")


def test_invalid_json_names_the_line(tmp_path):
    folder = ALL_KINDS["sts"](tmp_path)
    with open(folder / "test.jsonl", "a") as handle:
        handle.write("{not json\n")
    with pytest.raises(TaskFormatError, match=r"test.jsonl:15: not valid JSON"):
        read_folder(folder)


def test_qrels_need_their_header(tmp_path):
    folder = ALL_KINDS["retrieval"](tmp_path)
    (folder / "qrels.tsv").write_text("q0\td0\t1\n")
    with pytest.raises(TaskFormatError, match="header"):
        read_folder(folder)


def test_subset_subfolders(tmp_path):
    ALL_KINDS["sts"](tmp_path / "multi", "en")
    ALL_KINDS["sts"](tmp_path / "multi", "de")
    data = read_folder(tmp_path / "multi")
    assert sorted(data.subsets) == ["de", "en"]


def test_a_file_that_is_not_utf8_is_a_format_error(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test.jsonl").write_bytes(b'{"sentence1": "a", "sentence2": "b", "score": 1}\n\xff\xfe\n')
    with pytest.raises(TaskFormatError, match="not valid UTF-8"):
        read_folder(tmp_path / "t")


def test_classification_with_a_single_label_cannot_be_scored(tmp_path):
    """A classifier trained on one label fails deep inside scikit-learn; the folder check says why, in one line."""
    write_jsonl(tmp_path / "one" / "train.jsonl", [{"text": f"text {i}", "label": "spam"} for i in range(6)])
    write_jsonl(tmp_path / "one" / "test.jsonl", [{"text": f"other {i}", "label": i % 2} for i in range(6)])
    with pytest.raises(TaskFormatError) as error:
        read_folder(tmp_path / "one")
    assert str(error.value) == (
        f"{tmp_path / 'one' / 'train.jsonl'}: every row has the label 'spam'; a classifier "
        "needs at least two labels to learn from"
    )


def test_invalid_task_json_is_one_line(tmp_path):
    folder = ALL_KINDS["sts"](tmp_path)
    (folder / "task.json").write_text("{oops")
    with pytest.raises(TaskFormatError, match=r"task.json: not valid JSON \("):
        read_folder(folder)


def test_optional_json_file(tmp_path):
    from layerpick._util.jsonl import read_optional_json

    assert read_optional_json(tmp_path / "missing.json", TaskFormatError) is None
    (tmp_path / "list.json").write_text("[1, 2]")
    assert read_optional_json(tmp_path / "list.json", TaskFormatError) == [1, 2]


def test_a_text_that_is_not_a_string_says_what_it_is(tmp_path):
    folder = ALL_KINDS["classification"](tmp_path)
    write_jsonl(folder / "test.jsonl", [{"text": 42, "label": 0}])
    with pytest.raises(TaskFormatError) as error:
        read_folder(folder)
    assert str(error.value) == f"{folder / 'test.jsonl'}:1: field 'text' is a number, not a string"


def test_sts_scores_that_are_all_equal_cannot_be_scored(tmp_path):
    """A Spearman correlation with a constant has no value (mteb divided by zero after encoding)."""
    write_jsonl(
        tmp_path / "flat" / "test.jsonl", [{"sentence1": f"a {i}", "sentence2": f"b {i}", "score": 3} for i in range(6)]
    )
    with pytest.raises(TaskFormatError) as error:
        resolve_tasks([str(tmp_path / "flat")])
    assert str(error.value) == (
        f"{tmp_path / 'flat' / 'test.jsonl'}: every row has the score 3; STS needs at least "
        "two different scores to correlate with"
    )


def test_pair_classification_needs_two_pairs(tmp_path):
    write_jsonl(tmp_path / "p" / "test.jsonl", [{"sentence1": "a", "sentence2": "b", "label": 1}])
    with pytest.raises(TaskFormatError, match="at least two pairs"):
        resolve_tasks([str(tmp_path / "p")])


def _qrels(folder, pairs):
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in pairs))
    return folder


def test_qrels_of_absent_documents_only_cannot_be_scored(tmp_path):
    """Every ndcg would be 0 (it was, silently, exit 0)."""
    folder = _qrels(ALL_KINDS["retrieval"](tmp_path), [(f"q{i}", f"gone{i}") for i in range(3)])
    with pytest.raises(TaskFormatError) as error:
        read_folder(folder)
    assert str(error.value) == (
        f"{folder / 'qrels.tsv'}: none of the 3 documents it judges is in corpus.jsonl "
        "(e.g. 'gone0'); every score would be 0"
    )


def test_qrels_of_absent_queries_only_cannot_be_scored(tmp_path):
    folder = _qrels(ALL_KINDS["retrieval"](tmp_path), [("who", "d1"), ("what", "d2")])
    with pytest.raises(TaskFormatError) as error:
        read_folder(folder)
    assert str(error.value) == (
        f"{folder / 'qrels.tsv'}: none of the 2 queries it judges is in queries.jsonl "
        "(e.g. 'what'); no query could be evaluated"
    )


def test_qrels_naming_some_absent_ids_warn_once_with_the_counts(tmp_path, caplog):
    folder = _qrels(
        ALL_KINDS["retrieval"](tmp_path), [("q0", "d0"), ("q1", "d3"), ("q1", "gone"), ("who", "d2"), ("what", "d4")]
    )
    with caplog.at_level(logging.WARNING, logger="layerpick.validation.folders"):
        data = read_folder(folder)
        read_folder(folder)
    assert [record.getMessage() for record in caplog.records] == [
        f"{folder / 'qrels.tsv'}: 3 of 5 judgements name ids not in the folder (2 queries not in queries.jsonl, "
        "not evaluated; 1 document not in corpus.jsonl, never retrieved)"
    ]
    assert data.subsets["default"]["test"]["qrels"]["q1"] == {"d3": 1, "gone": 1}  # kept, as mteb scores them
