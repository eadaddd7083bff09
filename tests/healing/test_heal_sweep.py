"""Choosing K without labels (`layerpick heal --layers`): several cuts healed on the same texts, shallowest first
up to the first whose held-out cosine to the teacher clears 1 - max_loss, written at the output (the deeper ones
not healed), the heals kept only when no cut clears the line, so that another --max-loss reuses them."""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest

from layerpick.errors import LayerRangeError
from layerpick.exporting.metadata import read_metadata
from layerpick.healing import HealError, sweep
from layerpick.healing.fidelity import Fidelity
from layerpick.healing.result import HealReport
from tests.healing.conftest import TEXTS
from tests.testkit.tiny import LAYERS


def report_at(layer: int, cosine: float) -> HealReport:
    fid = Fidelity(cosine=cosine, knn_overlap=0.5, k=10, texts=50)
    return HealReport("out", "m", layer, 6, {}, {}, {}, fid, fid, "layerpick heal m --layer 1 --output x")


def test_the_rule_is_the_shallowest_cut_within_the_loss_of_the_teacher():
    heals = [report_at(2, 0.82), report_at(3, 0.88), report_at(4, 0.93)]
    assert sweep.choose(heals, 0.12) == 3
    assert sweep.choose(heals, 0.20) == 2
    assert sweep.choose(heals, 0.05) is None
    assert sweep.choose(heals, sweep.DEFAULT_MAX_LOSS) == 3


def test_layers_are_parsed_against_the_model():
    assert sweep.parse_layers("3, 2,3", 6) == [2, 3]
    assert sweep.parse_layers("all", 6) == [1, 2, 3, 4, 5]
    assert sweep.parse_layers([4, 2], 6) == [2, 4]
    with pytest.raises(LayerRangeError, match="1..5 of this model's 6 blocks"):
        sweep.parse_layers("2,6", 6)
    with pytest.raises(LayerRangeError):
        sweep.parse_layers("0,2", 6)
    with pytest.raises(HealError, match="comma-separated layers to heal"):
        sweep.parse_layers("two", 6)
    with pytest.raises(HealError, match="0 <= X < 1"):
        sweep.check_max_loss(1.5)


def test_the_sweep_command_names_the_layers_and_the_line():
    one = "layerpick heal m --layer 2 --output /w/.out.heal-sweep/layer-2 --epochs 3"
    command = sweep.sweep_command(one, [2, 3], "out", 0.12)
    assert command == "layerpick heal m --layers 2,3 --output out --epochs 3 --max-loss 0.12"


@pytest.fixture
def quick(tiny_config):
    return dataclasses.replace(tiny_config, epochs=1)


def test_the_first_clearing_cut_is_written_and_the_deeper_ones_are_not_healed(
    tiny_embedder, quick, tmp_path, caplog, monkeypatch
):
    """Healed shallowest first, the sweep stops at the first K that clears the line: the deeper cuts are said in the
    log and recorded as not healed, and the command that makes the sweep again names every layer asked for."""
    healed = []
    real_heal = sweep.heal_model
    monkeypatch.setattr(
        sweep, "heal_model", lambda model, layer, *a, **k: healed.append(layer) or real_heal(model, layer, *a, **k)
    )
    output = tmp_path / "healed"
    with caplog.at_level(logging.WARNING, logger="layerpick.healing"):
        result = sweep.heal_layers(str(tiny_embedder), "1,2,3", output, quick, max_loss=0.99)
    assert healed == [1] and result.chosen == 1 and [h.layer for h in result.heals] == [1]
    assert result.not_healed == (2, 3) and "the deeper cuts 2, 3 are not healed" in caplog.text
    heal = read_metadata(output).heal
    assert heal["layer"] == 1 and heal["output"] == str(output)
    assert [row["layer"] for row in heal["sweep"]["layers"]] == [1] and heal["sweep"]["not_healed"] == [2, 3]
    assert heal["sweep"]["chosen"] == 1 and heal["sweep"]["max_loss"] == 0.99
    assert "--layers 1,2,3" in heal["command"] and "--max-loss 0.99" in heal["command"]
    assert read_metadata(output).command == heal["command"]  # the export's own command is the sweep's
    assert json.loads(json.dumps(result.heal_section())) == heal  # what `heal --layers --json` prints
    assert not (tmp_path / ".healed.heal-sweep").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["healed"]

    stricter = (1.0 - result.report.after.cosine) / 2  # K = 1 (healed again the same way) misses it
    try:  # K = 2 clears this line or not: healed either way
        sweep.heal_layers(
            str(tiny_embedder), "1,2", output, dataclasses.replace(quick, overwrite=True), max_loss=stricter
        )
    except sweep.NoCutClears:
        pass
    assert healed == [1, 1, 2]


def test_the_teacher_encodes_the_texts_once_for_every_k(tiny_embedder, quick, tmp_path, monkeypatch):
    from layerpick.healing import teacher

    sizes = []  # the number of texts of each encode: all TEXTS by the teacher, fewer for the cuts' fidelity
    real_encode = teacher.encode

    def counted(encoder, texts, *rest):
        sizes.append(len(texts))
        return real_encode(encoder, texts, *rest)

    monkeypatch.setattr(teacher, "encode", counted)
    with pytest.raises(sweep.NoCutClears):  # no cut clears a loss of 0: both are healed
        sweep.heal_layers(str(tiny_embedder), [1, 2], tmp_path / "healed", quick, max_loss=0.0)
    kept = tmp_path / ".healed.heal-sweep"
    assert (kept / "layer-1").is_dir() and (kept / "layer-2").is_dir()
    assert sizes.count(TEXTS) == 1


def test_an_interrupted_sweep_keeps_a_raw_models_teacher_and_its_vectors(tiny_dirs, quick, tmp_path, caplog):
    from tests.healing.test_heal import InterruptAtStep

    output = tmp_path / "healed"
    with pytest.raises(KeyboardInterrupt):
        sweep.heal_layers(str(tiny_dirs("llama")), [1, 2], output, quick, callbacks=[InterruptAtStep(1)])
    kept = tmp_path / ".healed.heal-sweep"
    assert (kept / "teacher-vectors.safetensors").is_file() and (kept / "teacher" / "layerpick.json").is_file()
    with caplog.at_level(logging.INFO, logger="layerpick.healing.teacher"):
        result = sweep.heal_layers(str(tiny_dirs("llama")), [1, 2], output, quick, max_loss=0.99)
    assert caplog.text.count("teacher vectors read from") == 1  # K = 1 (which clears) did not encode them again
    assert result.report.teacher["kind"] == "full-depth" and not kept.exists()


def test_no_cut_clearing_keeps_the_heals_and_another_line_reuses_them(tiny_embedder, quick, tmp_path, monkeypatch):
    output = tmp_path / "healed"
    with pytest.raises(sweep.NoCutClears, match="no healed cut reached a held-out cosine of 1"):
        sweep.heal_layers(str(tiny_embedder), [1, LAYERS - 1], output, quick, max_loss=0.0)
    kept = tmp_path / ".healed.heal-sweep"
    assert not output.exists() and (kept / "layer-1").is_dir() and (kept / f"layer-{LAYERS - 1}").is_dir()

    def no_training(*args, **kwargs):
        raise AssertionError("a kept heal was trained again")

    monkeypatch.setattr(sweep, "heal_model", no_training)
    result = sweep.heal_layers(str(tiny_embedder), [1, LAYERS - 1], output, quick, max_loss=0.99)
    assert result.chosen == 1 and read_metadata(output).heal["sweep"]["chosen"] == 1
    assert [h.layer for h in result.heals] == [1] and result.not_healed == (LAYERS - 1,)
    assert not kept.exists()


def test_other_settings_start_the_sweep_over(tiny_embedder, quick, tmp_path):
    output = tmp_path / "healed"
    with pytest.raises(sweep.NoCutClears):
        sweep.heal_layers(str(tiny_embedder), [1], output, quick, max_loss=0.0)
    other = dataclasses.replace(quick, learning_rate=quick.learning_rate / 2)
    result = sweep.heal_layers(str(tiny_embedder), [1], output, other, max_loss=0.99)
    assert result.report.training["learning_rate"] == other.learning_rate


def test_bad_layers_are_refused_before_anything_is_written(tiny_embedder, quick, tmp_path):
    with pytest.raises(LayerRangeError):
        sweep.heal_layers(str(tiny_embedder), [1, LAYERS], tmp_path / "out", quick)
    assert list(tmp_path.iterdir()) == []


def test_the_cli_prints_every_k_and_refuses_mixed_requests(tiny_embedder, heal_texts, tmp_path, capsys):
    from layerpick._util import interrupt
    from layerpick.cli import app as cli_app

    output = tmp_path / "healed"
    common = ["heal", str(tiny_embedder), "--fit-texts", str(heal_texts), "--epochs", "1", "--batch-size", "16"]
    interrupt.reset()
    try:
        code = cli_app.run([*common, "--layers", "1,2", "--max-loss", "0.99", "--output", str(output), "-q"])
        printed = capsys.readouterr()
        assert code == 0, printed.err
        assert "kept K = 1" in printed.out and "<- kept" in printed.out and f"healed {output}" in printed.out
        for mixed, message in (
            (["--layer", "1", "--layers", "1,2"], "--layer heals one cut and --layers chooses"),
            (["--layer", "1", "--max-loss", "0.1"], "--max-loss is the line a sweep's cuts must clear"),
            (["--layers", "1", "--max-loss", "1"], "0 <= X < 1"),
        ):
            code = cli_app.run([*common, *mixed, "--output", str(tmp_path / "other"), "-q"])
            err = capsys.readouterr().err
            assert code == 1 and message in err and len(err.strip().splitlines()) == 1, err
    finally:
        interrupt.reset()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["healed"]
