"""A heal's exit 0 means the written model is what its record says, made from the model and texts as they are now
(issue 51): kept work is keyed on the content of the model and the texts, a training that diverged or made the cut
worse is refused, a full disk in torch's writer is the documented line, and a healed export says how it was made."""

from __future__ import annotations

import dataclasses
import logging
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import TrainerCallback

from layerpick._util import interrupt
from layerpick.cli import app as cli_app
from layerpick.core.calibration import load_calibration
from layerpick.exporting.metadata import read_metadata
from layerpick.healing import heal_model, sweep
from layerpick.healing.outcome import HealOutcomeError
from layerpick.healing.workspace import work_folder
from tests.healing.conftest import LAYER, TEXTS
from tests.healing.test_heal import StopAfterFirstCheckpoint, Interrupted


def write_texts(path, start: int):
    texts = load_calibration(None).texts[start : start + TEXTS]
    path.write_text("\n".join(text[:200] for text in texts), encoding="utf-8")
    return path


def test_a_sweep_heals_again_when_its_texts_changed_at_the_same_path(tiny_embedder, tiny_config, tmp_path, caplog):
    texts = write_texts(tmp_path / "texts.txt", 0)
    config = dataclasses.replace(tiny_config, fit_texts=str(texts), epochs=1)
    output = tmp_path / "healed"
    with pytest.raises(sweep.NoCutClears):
        sweep.heal_layers(str(tiny_embedder), [1], output, config, max_loss=0.0)  # the heal of K = 1 kept
    write_texts(texts, TEXTS)  # other texts, same path
    with caplog.at_level(logging.WARNING, logger="layerpick.healing.sweep"):
        result = sweep.heal_layers(str(tiny_embedder), [1], output, config, max_loss=0.99)
    assert "texts_content: the fit texts' bytes changed" in caplog.text
    assert "reusing the heal kept" not in caplog.text
    assert read_metadata(output).heal["texts"]["sha256"] == load_calibration(str(texts)).sha256
    assert result.report.texts["sha256"] == load_calibration(str(texts)).sha256


def perturb_weights(folder):
    weights = load_file(str(folder / "model.safetensors"))
    generator = torch.Generator().manual_seed(7)
    changed = {name: tensor + torch.randn(tensor.shape, generator=generator) for name, tensor in weights.items()}
    save_file(changed, str(folder / "model.safetensors"), metadata={"format": "pt"})


def test_a_resumed_heal_starts_over_when_the_model_changed_in_place(tiny_dirs, tiny_config, tmp_path, caplog):
    model = tmp_path / "llama"
    shutil.copytree(tiny_dirs("llama"), model)
    output = tmp_path / "out"
    with pytest.raises(Interrupted):
        heal_model(str(model), LAYER, output, tiny_config, callbacks=[StopAfterFirstCheckpoint()])
    assert (work_folder(output) / "checkpoints" / "checkpoint-5").is_dir()
    perturb_weights(model)
    with caplog.at_level(logging.WARNING, logger="layerpick.healing.workspace"):
        report = heal_model(str(model), LAYER, output, tiny_config)
    assert "model_content: the model's files changed" in caplog.text and "starting over" in caplog.text
    assert report.training["resumed_from_epoch"] is None


class Poison(TrainerCallback):
    """Every weight NaN after the first step: the next step's loss is NaN."""

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step == 1:
            for parameter in model.parameters():
                parameter.data.fill_(float("nan"))


def test_a_non_finite_loss_stops_the_training_in_one_line(tiny_dirs, tiny_config, tmp_path):
    output = tmp_path / "out"
    with pytest.raises(HealOutcomeError) as error:
        heal_model(str(tiny_dirs("llama")), LAYER, output, tiny_config, callbacks=[Poison()])
    message = str(error.value)
    assert message.startswith("the training diverged: its loss was nan at step 2") and "\n" not in message
    assert "try a smaller --learning-rate (this heal's: 0.001; the default: 0.0002" in message
    assert sorted(path.name for path in tmp_path.iterdir()) == []  # nothing to resume: the same run diverges again


class Reverse(TrainerCallback):
    """The trained cut's vectors reversed at the end (its final norm's scale negated): its cosine to the teacher
    falls below the plain cut's."""

    def on_train_end(self, args, state, control, model=None, **kwargs):
        model[0].auto_model.norm.weight.data.neg_()


def test_a_heal_that_made_the_cut_worse_is_refused_and_nothing_is_kept(tiny_dirs, tiny_config, tmp_path):
    output = tmp_path / "out"
    with pytest.raises(HealOutcomeError, match=r"the heal made the cut worse: its held-out cosine to the teacher fell"):
        heal_model(str(tiny_dirs("llama")), LAYER, output, tiny_config, callbacks=[Reverse()])
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_a_full_disk_in_torchs_checkpoint_writer_is_the_documented_line(
    tiny_dirs, heal_texts, tmp_path, monkeypatch, capsys
):
    """torch's writer says "file write failed" without an errno: the disk itself is asked."""
    from transformers import Trainer

    from layerpick._util import disk

    full = {"now": False}
    real_free = disk.free_bytes

    def writer_fails(self, output_dir):
        full["now"] = True
        raise RuntimeError(
            "[enforce fail at inline_container.cc:626] . PytorchStreamWriter failed writing file data/0: file write "
            "failed"
        )

    monkeypatch.setattr(Trainer, "_save_rng_state", writer_fails)
    monkeypatch.setattr(disk, "free_bytes", lambda path: 0 if full["now"] else real_free(path))
    output = tmp_path / "out"
    argv = ["heal", str(tiny_dirs("llama")), "-k", str(LAYER), "--fit-texts", str(heal_texts), "-o", str(output)]
    interrupt.reset()
    try:
        code = cli_app.run([*argv, "--epochs", "1", "--batch-size", "16", "-q"])
    finally:
        interrupt.reset()
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("layerpick:")]
    checkpoints = work_folder(output) / "checkpoints"
    assert code == 1 and said == [f"layerpick: error: no space left on device while writing {checkpoints}"]
    assert not output.exists()


def test_a_healed_export_says_it_is_the_heals(healed):
    """The card and layerpick.json carry the heal's command (not the cut's export into the work folder), the blocks
    kept (K = 1 of 4 healed from spread blocks: block 4) and the texts' source and sha256."""
    report, output = healed
    metadata = read_metadata(output)
    card = (output / "README.md").read_text(encoding="utf-8")
    assert metadata.command == report.command and metadata.command.startswith("layerpick heal ")
    assert ".heal/cut" not in metadata.command and ".heal/cut" not in card
    assert f"## Reproduce\n\n```bash\n{report.command}\n```" in card
    assert "blocks 1, 2 and 3 are removed (block 4 kept)" in card and "the last 3 blocks are removed" not in card
    assert "| layers kept | 1 of 4 (healed from blocks 4) |" in card
    texts = metadata.heal["texts"]
    assert f"({texts['source']}, sha256 `{texts['sha256']}`)" in card
