"""What decides whether a kept heal resumes: the run key names a path however it was typed and the device `auto`
picks however it was named; a key that changed says which settings did. And a teacher that cannot be healed
towards is refused from one text, before its pass over all of them."""

from __future__ import annotations

import dataclasses
import logging
import os

import pytest

from layerpick.core.load_options import LoadOptions
from layerpick.core.devices import resolve_device
from layerpick.healing import HealError, heal_model
from layerpick.healing import teacher as teachers
from layerpick.healing.job import run_key
from layerpick.healing.workspace import work_folder, workspace


def test_a_path_and_the_device_auto_picks_key_the_same_run_however_typed(tiny_dirs, tiny_config, monkeypatch):
    model = tiny_dirs("llama")
    monkeypatch.chdir(model.parent.parent)
    typed_absolute = run_key(str(model), 1, tiny_config, LoadOptions())
    relative_texts = dataclasses.replace(tiny_config, fit_texts=os.path.relpath(tiny_config.fit_texts))
    typed_relative = run_key(
        os.path.join(".", os.path.relpath(model)), 1, relative_texts, LoadOptions(device=resolve_device("auto"))
    )
    assert typed_relative == typed_absolute
    assert run_key("minilm-l6", 1, tiny_config, LoadOptions())["model"] == "minilm-l6"  # an alias stays a name


def test_a_changed_key_says_which_settings_changed(tmp_path, caplog):
    output = tmp_path / "out"
    key = {"model": "m", "layer": 2, "epochs": 5, "fit_texts": ["a.txt"]}
    with pytest.raises(KeyboardInterrupt), workspace(output, key) as work:
        (work / "teacher-vectors.safetensors").write_bytes(b"kept")  # worth resuming
        raise KeyboardInterrupt
    with caplog.at_level(logging.WARNING), workspace(output, {**key, "epochs": 6, "fit_texts": ["b.txt"]}):
        pass
    assert "a heal with other settings (epochs, fit_texts) left" in caplog.text
    assert not work_folder(output).exists()


def test_a_teacher_of_another_width_is_refused_before_its_pass(tmp_path, heal_texts, tiny_config, monkeypatch):
    from sentence_transformers import SentenceTransformer, models

    from tests.testkit.tiny import save_tiny

    transformer = models.Transformer(str(save_tiny("bert", tmp_path / "bert", seed=3)), max_seq_length=48)
    width = transformer.get_embedding_dimension()
    dense = models.Dense(width, width // 2)
    pooling = models.Pooling(width)
    SentenceTransformer(modules=[transformer, pooling, dense, models.Normalize()]).save(str(tmp_path / "dense"))
    encoded = []
    original = teachers.encode
    monkeypatch.setattr(
        teachers, "encode", lambda encoder, texts, *a: encoded.append(len(texts)) or original(encoder, texts, *a)
    )
    with pytest.raises(HealError, match=f"gives {width // 2} dimensions and the cut {width}"):
        heal_model(str(tmp_path / "dense"), 1, tmp_path / "out", tiny_config)
    assert encoded == [1]  # one text, not the teacher's pass over all of them
    assert not (tmp_path / "out").exists() and not work_folder(tmp_path / "out").exists()
