"""The folder writer round-trips: an injected task written out and read back gives the same rows and scores."""

import hashlib

import mteb
import numpy as np
import pytest
from mteb.models.abs_encoder import AbsEncoder

from layerpick.validation import (
    TaskFormatError,
    materialize_tasks,
    read_folder,
    resolve_tasks,
    write_task_folder,
)
from layerpick.validation.encoder import layer_model_meta
from layerpick.validation.evaluate import main_score, single_threaded_blas
from tests.testkit.tasks import ALL_KINDS


class HashEncoder(AbsEncoder):
    """Deterministic pseudo-random vectors per text: scores depend only on the data, not on a model."""

    mteb_model_meta = layer_model_meta("hash", 0, "test", embed_dim=16, max_tokens=None, experiment={})

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs):
        texts = [t for batch in inputs for t in batch["text"]]
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little") for t in texts]
        return np.stack([np.random.default_rng(s).standard_normal(16) for s in seeds]).astype(np.float32)


def score(folder):
    (spec,) = resolve_tasks([str(folder)])
    with single_threaded_blas():
        result = mteb.evaluate(HashEncoder(), spec.new_task(), cache=None, show_progress_bar=False, co2_tracker=False)
    return main_score(result.task_results[0])


@pytest.mark.parametrize("kind", sorted(ALL_KINDS))
def test_custom_folder_round_trip(tmp_path, kind):
    original = ALL_KINDS[kind](tmp_path / "in")
    (spec,) = resolve_tasks([str(original)])
    written = write_task_folder(spec.new_task(), tmp_path / "out" / original.name)
    assert read_folder(written).subsets == read_folder(original).subsets
    assert score(written) == score(original)


def test_mteb_task_round_trip_keeps_its_subset(tmp_path):
    original = ALL_KINDS["classification"](tmp_path / "in", "AmazonCounterfactualClassification")
    (spec,) = resolve_tasks([str(original)])
    written = write_task_folder(spec.new_task(), tmp_path / "out" / "AmazonCounterfactualClassification")
    assert [p.name for p in written.iterdir()] == ["en"]
    assert read_folder(written).subsets["en"] == read_folder(original).subsets["default"]
    assert score(written) == score(original)


def test_existing_folder_is_kept_unless_overwritten(tmp_path):
    original = ALL_KINDS["sts"](tmp_path / "in", "STSBenchmark")
    (spec,) = resolve_tasks([str(original)])
    target = tmp_path / "out"
    target.mkdir()
    with pytest.raises(TaskFormatError, match="exists"):
        write_task_folder(spec.new_task(), target)
    write_task_folder(spec.new_task(), target, overwrite=True)
    assert read_folder(target).subsets == read_folder(original).subsets


def test_materialize_refuses_folders(tmp_path):
    with pytest.raises(TaskFormatError, match="already a local folder"):
        materialize_tasks([str(ALL_KINDS["sts"](tmp_path))], tmp_path / "out")
