"""The representation store: keyed by everything that changes a vector, reused across opens, safe to interrupt."""

import numpy as np
import pytest
import torch

from layerpick.validation import RepresentationStore, StoreKey
from layerpick.validation.errors import StoreError

KEY = StoreKey("tiny", "/models/tiny", "abc", None, "exported", "mean", 128, "float32")


def states(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(5, n, 8, generator=torch.Generator().manual_seed(seed))


def test_add_then_read_every_layer_in_request_order(tmp_path):
    store = RepresentationStore(tmp_path, KEY)
    texts = ["a", "b", "c"]
    values = states(3)
    store.add(texts, values)
    for layer in range(5):
        np.testing.assert_array_equal(store.layer(["c", "a", "c"], layer), values[layer][[2, 0, 2]].numpy())


def test_missing_lists_each_new_text_once(tmp_path):
    store = RepresentationStore(tmp_path, KEY)
    store.add(["a"], states(1))
    assert store.missing(["a", "b", "b", "c"]) == ["b", "c"]


def test_reopened_store_keeps_everything_across_shards(tmp_path):
    store = RepresentationStore(tmp_path, KEY)
    first, second = states(2, 1), states(1, 2)
    store.add(["a", "b"], first)
    store.add(["c"], second)
    again = RepresentationStore(tmp_path, KEY)
    assert len(again) == 3 and again.missing(["a", "b", "c"]) == []
    np.testing.assert_array_equal(again.layer(["c", "b"], 4), torch.stack([second[4, 0], first[4, 1]]).numpy())


def test_key_separates_settings(tmp_path):
    RepresentationStore(tmp_path, KEY).add(["a"], states(1))
    other = StoreKey(**{**KEY.__dict__, "pooling": "lasttoken"})
    assert RepresentationStore(tmp_path, other).missing(["a"]) == ["a"]


def test_interrupted_and_damaged_files_are_skipped(tmp_path):
    store = RepresentationStore(tmp_path, KEY)
    store.add(["a"], states(1))
    (store.directory / ".tmp-shard-123").write_bytes(b"half written")
    (store.directory / "shard-0-broken.safetensors").write_bytes(b"not safetensors")
    again = RepresentationStore(tmp_path, KEY)
    assert again.missing(["a", "b"]) == ["b"]


def test_shape_mismatch_is_refused(tmp_path):
    store = RepresentationStore(tmp_path, KEY)
    store.add(["a"], states(1))
    with pytest.raises(StoreError):
        store.add(["b"], torch.zeros(3, 1, 8))
    with pytest.raises(StoreError):
        store.add(["b", "c"], torch.zeros(5, 1, 8))
