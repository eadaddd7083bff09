"""Resolving --tasks items: MTEB names, benchmarks, folders named after MTEB tasks, custom folders, typos."""

import pytest

from layerpick.validation import (
    TaskFormatError,
    TaskNotFoundError,
    resolve_tasks,
    split_items,
)
from tests.testkit.tasks import ALL_KINDS


def test_unknown_task_suggests_the_closest_name():
    with pytest.raises(TaskNotFoundError, match="did you mean STSBenchmark"):
        resolve_tasks(["STSBenchmrk"])


def test_wrong_case_is_suggested():
    with pytest.raises(TaskNotFoundError, match="did you mean SciFact"):
        resolve_tasks(["scifact"])


def test_missing_folder_path():
    with pytest.raises(TaskNotFoundError, match="task folder not found"):
        resolve_tasks(["./no/such/folder"])


def test_split_items_keeps_benchmark_commas():
    assert split_items("STSBenchmark, MTEB(eng, v2),./data/x") == ["STSBenchmark", "MTEB(eng, v2)", "./data/x"]


def test_split_items_keeps_a_path_with_a_comma_whole(tmp_path):
    folder = ALL_KINDS["sts"](tmp_path, "scores,2024")
    other = ALL_KINDS["sts"](tmp_path, "other")
    assert split_items(str(folder)) == [str(folder)]
    assert split_items(f"STSBenchmark,{folder},{other}") == ["STSBenchmark", str(folder), str(other)]
    assert split_items(f"{tmp_path}/scores,{other}") == [f"{tmp_path}/scores", str(other)]  # no such path
    (spec,) = resolve_tasks(split_items(str(folder)))
    assert spec.folder == folder


def test_benchmark_expands_to_its_tasks():
    specs = resolve_tasks(["MTEB(eng, v2)"])
    assert len(specs) > 10 and all(spec.origin == "mteb" for spec in specs)


def test_hub_task_keeps_mteb_metadata():
    (spec,) = resolve_tasks(["BIOSSES"])
    assert (spec.type, spec.main_score, spec.origin) == ("STS", "cosine_spearman", "mteb")


def test_folder_named_after_mteb_task_uses_the_real_class(tmp_path):
    folder = ALL_KINDS["sts"](tmp_path, "STSBenchmark")
    (spec,) = resolve_tasks([str(folder)])
    task = spec.new_task()
    assert type(task).__name__ == "STSBenchmarkSTS"
    assert spec.origin == "mteb+folder" and spec.main_score == "cosine_spearman"
    assert task.metadata.revision == spec.dataset_revision and spec.dataset_revision.startswith("local-")
    assert task.data_loaded and len(task.dataset["default"]["test"]) == 14


def test_task_data_dirs_replace_the_hub(tmp_path):
    ALL_KINDS["sts"](tmp_path, "BIOSSES")
    (spec,) = resolve_tasks(["BIOSSES"], data_dirs=[tmp_path])
    assert spec.origin == "mteb+folder" and spec.folder == tmp_path / "BIOSSES"


def test_folder_of_the_wrong_kind_for_its_task(tmp_path):
    folder = ALL_KINDS["classification"](tmp_path, "STSBenchmark")
    with pytest.raises(TaskFormatError, match="STS task but the folder holds classification"):
        resolve_tasks([str(folder)])


def test_multilingual_task_reads_a_flat_folder_as_english(tmp_path):
    folder = ALL_KINDS["classification"](tmp_path, "AmazonCounterfactualClassification")
    (spec,) = resolve_tasks([str(folder)])
    task = spec.new_task()
    assert task.hf_subsets == ["en"] and list(task.eval_splits) == ["test"]
    assert any("validation" in note for note in spec.notes)


def test_custom_folder_becomes_a_task_of_its_kind(tmp_path):
    folder = ALL_KINDS["clustering"](tmp_path, "Banking77Clustering_derived")
    (spec,) = resolve_tasks([str(folder)])
    assert (spec.origin, spec.type, spec.main_score) == ("folder", "Clustering", "v_measure")
    assert spec.new_task().metadata.name == "Banking77Clustering_derived"


def test_custom_folder_options(tmp_path):
    folder = ALL_KINDS["sts"](tmp_path, "mine")
    (folder / "task.json").write_text('{"eval_langs": ["deu-Latn"], "main_score": "cosine_pearson"}')
    (spec,) = resolve_tasks([str(folder)])
    assert spec.main_score == "cosine_pearson"
    assert spec.new_task().metadata.eval_langs == ["deu-Latn"]


def test_duplicates_are_dropped(tmp_path):
    folder = ALL_KINDS["sts"](tmp_path)
    assert len(resolve_tasks([str(folder), str(folder)])) == 1


def test_each_new_task_is_fresh(tmp_path):
    (spec,) = resolve_tasks([str(ALL_KINDS["retrieval"](tmp_path))])
    first, second = spec.new_task(), spec.new_task()
    assert first is not second
    first.dataset["default"]["test"]["relevant_docs"] = {}
    assert second.dataset["default"]["test"]["relevant_docs"]
