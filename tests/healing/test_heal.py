"""A heal on tiny random models: the healed export is an ordinary export that loads, its fidelity to the teacher
rises on the held-out texts, an interrupted run resumes to the same result, and the work folder goes away."""

from __future__ import annotations

import errno
import json
import logging
import shutil

import pytest
import torch
from transformers import TrainerCallback

from layerpick.exporting.metadata import ExportMetadata, read_metadata
from layerpick.healing import HealReport, heal_model
from layerpick.healing.workspace import work_folder
from tests.healing.conftest import LAYER, TEXTS

PROBE = ["the quick brown fox", "a model cut after k blocks", "numbers like 42 and 3.14"]


def encode(folder):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(PROBE, convert_to_tensor=True)


def test_the_healed_export_loads_and_is_closer_to_its_teacher(healed):
    report, output = healed
    assert encode(output).shape == (len(PROBE), 32)
    assert report.after.cosine > report.before.cosine + 0.05  # measured 0.53 -> 0.80 with seed 0
    # the 10-neighbour overlap of 50 texts under a tiny random model moves by a few hundredths with the batches
    # drawn (0.424 -> 0.440 random, -> 0.418 length-grouped): it must not fall further than that
    assert report.after.knn_overlap >= report.before.knn_overlap - 0.03
    assert report.after.texts == report.texts["held_out"] == 50 and report.texts["count"] == TEXTS
    assert report.training["final_loss"] < report.training["losses"][0]["loss"]
    assert not work_folder(output).exists()


def test_the_export_says_it_was_healed(healed, tiny_dirs):
    report, output = healed
    metadata = read_metadata(output)
    assert metadata.is_healed and metadata.layer == LAYER and metadata.num_layers == 4
    assert HealReport.from_json(metadata.heal) == report
    assert metadata.heal["teacher"]["kind"] == "full-depth"  # a raw model: its own representation at layer L
    assert metadata.heal["texts"]["sha256"] and metadata.heal["training"]["epochs"] == 2
    card = (output / "README.md").read_text(encoding="utf-8")
    assert "## Healed" in card and f"{report.after.cosine:.4f}" in card


def test_the_healed_weights_differ_from_the_cut(healed, tiny_dirs, tmp_path):
    from layerpick.exporting import ExportConfig, export_model

    _, output = healed
    export_model(str(tiny_dirs("llama")), LAYER, tmp_path / "cut", ExportConfig(progress=False))
    # 1e-3: a lower bound far above float32 round-off, so the healed weights really moved
    assert (encode(output) - encode(tmp_path / "cut")).abs().max() > 1e-3
    assert sorted(p.name for p in output.iterdir()) == sorted(p.name for p in (tmp_path / "cut").iterdir())


def test_the_report_round_trips(healed, tmp_path):
    report, _ = healed
    again = HealReport.from_json(json.loads(json.dumps(report.to_json())))
    assert again == report and again.to_json()["format"] == "layerpick-heal/1"
    metadata = ExportMetadata.read(healed[1] / "layerpick.json")
    assert ExportMetadata.from_json(json.loads(json.dumps(metadata.to_json()))) == metadata


class Interrupted(Exception):
    pass


class StopAfterFirstCheckpoint(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        raise Interrupted(state.epoch)


def test_a_resumed_heal_equals_an_uninterrupted_one(healed, tiny_dirs, tiny_config, tmp_path):
    reference, reference_output = healed
    output = tmp_path / "resumed"
    with pytest.raises(Interrupted):
        heal_model(str(tiny_dirs("llama")), LAYER, output, tiny_config, callbacks=[StopAfterFirstCheckpoint()])
    checkpoints = work_folder(output) / "checkpoints"
    assert not output.exists() and (checkpoints / "checkpoint-5").is_dir()
    shutil.copytree(checkpoints / "checkpoint-5", checkpoints / "checkpoint-10")  # one cut short: no trainer state
    (checkpoints / "checkpoint-10" / "trainer_state.json").unlink()
    report = heal_model(str(tiny_dirs("llama")), LAYER, output, tiny_config)
    assert report.training["resumed_from_epoch"] == 1.0
    assert report.after == reference.after and report.training["losses"] == reference.training["losses"]
    assert torch.equal(encode(output), encode(reference_output))
    assert not work_folder(output).exists()


def test_a_full_disk_during_a_checkpoint_is_one_line_and_the_heal_resumes(
    healed, tiny_dirs, heal_texts, tmp_path, monkeypatch, capsys
):
    """The second epoch's checkpoint is cut short by a full disk: one line, the work kept; the next run drops the
    incomplete checkpoint, resumes from the first, and ends where an uninterrupted run ends."""
    from transformers import Trainer

    from layerpick._util import interrupt
    from layerpick.cli import app as cli_app

    reference, reference_output = healed
    saves = {"count": 0}
    original = Trainer._save_rng_state

    def full_on_second(self, output_dir):
        saves["count"] += 1
        if saves["count"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(output_dir))
        return original(self, output_dir)

    monkeypatch.setattr(Trainer, "_save_rng_state", full_on_second)
    output = tmp_path / "out"
    argv = ["heal", str(tiny_dirs("llama")), "--layer", str(LAYER), "--fit-texts", str(heal_texts), "-o", str(output)]
    interrupt.reset()
    try:
        code = cli_app.run([*argv, "--epochs", "2", "--batch-size", "16", "--learning-rate", "0.001", "-q"])
    finally:
        interrupt.reset()
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("layerpick:")]
    assert code == 1 and len(said) == 1 and said[0].startswith("layerpick: error: no space left on device")
    checkpoints = work_folder(output) / "checkpoints"
    assert not output.exists() and (checkpoints / "checkpoint-5" / "trainer_state.json").is_file()
    assert not (checkpoints / "checkpoint-10").exists()  # cut short (no trainer_state.json): removed
    monkeypatch.setattr(Trainer, "_save_rng_state", original)
    report = heal_model(str(tiny_dirs("llama")), LAYER, output, tiny_config_of(heal_texts))
    assert report.training["resumed_from_epoch"] == 1.0 and report.after == reference.after
    assert torch.equal(encode(output), encode(reference_output))


def tiny_config_of(heal_texts):
    from layerpick.healing import HealConfig

    return HealConfig(fit_texts=str(heal_texts), epochs=2, batch_size=16, learning_rate=1e-3, progress=False)


class InterruptAtStep(TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt


def test_a_heal_interrupted_within_an_epoch_resumes_there_to_the_same_result(healed, tiny_dirs, tiny_config, tmp_path):
    """A checkpoint after every step (--checkpoint-minutes 0), an interrupt at step 3 of epoch 1's five: the run
    resumes from step 2 or 3, skips the batches already trained on, and ends where the uninterrupted run ends."""
    from dataclasses import replace

    reference, reference_output = healed
    output = tmp_path / "mid-epoch"
    every_step = replace(tiny_config, checkpoint_minutes=0)
    with pytest.raises(KeyboardInterrupt):
        heal_model(str(tiny_dirs("llama")), LAYER, output, every_step, callbacks=[InterruptAtStep(3)])
    kept = sorted(path.name for path in (work_folder(output) / "checkpoints").iterdir())
    assert kept in (["checkpoint-2"], ["checkpoint-3"])
    report = heal_model(str(tiny_dirs("llama")), LAYER, output, tiny_config)
    assert report.training["resumed_from_epoch"] in (0.4, 0.6)
    assert report.after == reference.after and report.training["losses"] == reference.training["losses"]
    assert torch.equal(encode(output), encode(reference_output))


def test_timed_checkpoints_ask_for_a_save_once_the_minutes_have_passed():
    from transformers import TrainerControl

    from layerpick.healing.train import timed_checkpoints

    now = {"t": 0.0}
    callback = timed_checkpoints(30, clock=lambda: now["t"])
    control = TrainerControl()
    callback.on_train_begin(None, None, control)
    now["t"] = 29 * 60
    callback.on_step_end(None, None, control)
    assert not control.should_save
    now["t"] = 30 * 60
    callback.on_step_end(None, None, control)
    assert control.should_save
    callback.on_save(None, None, control)
    control.should_save = False
    now["t"] = 59 * 60
    callback.on_step_end(None, None, control)
    assert not control.should_save  # the clock starts again at the last save


def test_an_interrupt_before_the_first_checkpoint_keeps_the_teacher_vectors(
    healed, tiny_dirs, tiny_config, tmp_path, caplog
):
    reference, _ = healed
    output = tmp_path / "early"
    with pytest.raises(KeyboardInterrupt):
        heal_model(str(tiny_dirs("llama")), LAYER, output, tiny_config, callbacks=[InterruptAtStep(2)])
    work = work_folder(output)
    assert not output.exists() and (work / "teacher-vectors.safetensors").is_file()
    assert not (work / "checkpoints").exists() or not list((work / "checkpoints").iterdir())
    with caplog.at_level(logging.INFO, logger="layerpick.healing.teacher"):
        report = heal_model(str(tiny_dirs("llama")), LAYER, output, tiny_config)
    assert "teacher vectors read from" in caplog.text  # computed once, kept by the interrupted run
    assert report.training["resumed_from_epoch"] is None and report.after == reference.after


def test_a_bf16_heal_encodes_in_float32_after_training(tiny_dirs, tiny_config, tmp_path, monkeypatch):
    """On a GPU the trainer trains under bf16 autocast, which accelerate leaves wrapped around the model's forward;
    the held-out fidelity and the written export must come from float32 encoding (an H200 run failed its reload
    check, max abs diff 8.3e-4, before the wrapper was removed). bf16 autocast runs on a CPU too: force it here."""
    from layerpick.healing import train as heal_train

    monkeypatch.setattr(heal_train, "uses_bf16", lambda device: True)
    seen = {}
    original = heal_train.train

    def spy(student, *args, **kwargs):
        outcome = original(student, *args, **kwargs)
        seen["wrapped"] = "_original_forward" in student.__dict__
        return outcome

    monkeypatch.setattr("layerpick.healing.job.train", spy)
    config = tiny_config.__class__(**{**tiny_config.__dict__, "epochs": 1})
    report = heal_model(str(tiny_dirs("llama")), LAYER, tmp_path / "bf16", config)
    assert report.training["bf16"] is True and seen == {"wrapped": False}
    assert read_metadata(tmp_path / "bf16").is_healed  # the reload check passed: the export is written
