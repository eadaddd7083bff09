"""`layerpick run --heal-layers`: the export stage is a heal sweep on run's texts, benched like any export, reused
by the next run with the same settings and made again when a heal setting changes."""

from __future__ import annotations

import dataclasses

import pytest

from layerpick.benchmark.run import BenchConfig
from layerpick.core.calibration import load_calibration
from layerpick.errors import LayerpickError
from layerpick.healing.config import HealConfig
from layerpick.healing.plan import HealPlan, default_cuts
from layerpick.selection.config import SelectConfig
from layerpick.workflow import heal_stage
from layerpick.workflow.commands import reproduce_commands
from layerpick.workflow.run import RunConfig, run_workflow
from tests.healing.conftest import save_embedder

HEAL = HealConfig(layers="1,2", max_loss=0.99, epochs=1, batch_size=16, learning_rate=1e-3)


@pytest.fixture(scope="module")
def embedder_and_texts(tmp_path_factory):
    root = tmp_path_factory.mktemp("run-heal")
    texts = root / "texts.txt"
    texts.write_text("\n".join(text[:200] for text in load_calibration(None).texts[:120]), encoding="utf-8")
    return save_embedder(root, "bert"), texts


def config_for(texts, **heal_changes) -> RunConfig:
    return RunConfig(
        select=SelectConfig(calibration=str(texts), limit=24, transform="none"),
        bench=BenchConfig(batch_sizes=(1, 4), texts=8, repeats=1, memory=False),
        heal=dataclasses.replace(HEAL, **heal_changes),
    )


@pytest.mark.slow
def test_run_exports_the_healed_cut_and_reuses_it(embedder_and_texts, tmp_path, monkeypatch):
    embedder, texts = embedder_and_texts
    out = tmp_path / "run"
    result = run_workflow(str(embedder), out, config=config_for(texts), progress=False)
    assert result.export.is_healed and result.export.layer == 1
    assert result.export.heal["sweep"]["chosen"] == 1 and result.export.heal["texts"]["count"] == 120
    assert result.bench is not None and not (out / heal_stage.SWEEP_FOLDER).exists()
    assert "--heal-layers 1,2 --heal-max-loss 0.99 --heal-epochs 1" in reproduce_commands(result)[0]

    def no_heal(*args, **kwargs):
        raise AssertionError("the finished heal was made again")

    monkeypatch.setattr("layerpick.healing.heal_or_sweep", no_heal)
    again = run_workflow(str(embedder), out, config=config_for(texts), progress=False)
    assert again.stages["export"]["reused"] and again.export.heal["sweep"]["chosen"] == 1
    monkeypatch.undo()
    other = run_workflow(str(embedder), out, config=config_for(texts, layers="2"), progress=False)
    assert not other.stages["export"]["reused"] and other.export.layer == 2
    assert other.stages["select"]["reused"]


def test_bad_heal_settings_are_refused_before_any_stage(embedder_and_texts, tmp_path):
    embedder, texts = embedder_and_texts
    for changes, message in (
        ({"layers": "1,9"}, "out of range"),
        ({"layers": None}, "needs the layers to heal"),
        ({"max_loss": 2.0}, "0 <= X < 1"),
        ({"blocks": "1,2"}, "a sweep takes spread or first"),
    ):
        with pytest.raises(LayerpickError, match=message):
            run_workflow(str(embedder), tmp_path / "run", config=config_for(texts, **changes), progress=False)
        assert not (tmp_path / "run").exists()
    chosen = dataclasses.replace(config_for(texts), tasks=("STSBenchmark",))
    from layerpick.frontier.choice import ChoiceOptions

    with pytest.raises(LayerpickError, match="drop --choose validated"):
        run_workflow(
            str(embedder),
            tmp_path / "run",
            config=dataclasses.replace(chosen, choice=ChoiceOptions("validated")),
            progress=False,
        )


def test_a_changed_heal_setting_is_in_the_reproduce_line():
    from layerpick.workflow.commands import _heal_flags

    flags = _heal_flags(RunConfig(heal=dataclasses.replace(HEAL, blocks="first")))
    assert flags[-2:] == ["--heal-blocks", "first"] and "--heal-epochs" in flags
    assert "--heal-blocks" not in _heal_flags(RunConfig(heal=dataclasses.replace(HEAL, blocks="spread")))


AUTO = HealConfig(layers="auto", max_loss=0.99, epochs=1, batch_size=16, learning_rate=1e-3)


@pytest.mark.slow
def test_auto_heals_a_trained_embedder_says_its_plan_first_and_reports_the_heal(embedder_and_texts, tmp_path, caplog):
    embedder, texts = embedder_and_texts
    out = tmp_path / "run"
    config = dataclasses.replace(config_for(texts), heal=AUTO, heal_minutes=30)
    with caplog.at_level("WARNING"):
        result = run_workflow(str(embedder), out, config=config, progress=False)
    num = result.select.num_layers
    assert result.select.selected_layer == num  # select keeps a trained embedder whole; the run heals a cut
    assert result.export.is_healed and result.export.layer == default_cuts(num)[0]
    plan = HealPlan.read(out / heal_stage.PLAN_FILE)
    assert plan.layers == default_cuts(num) and plan.budget == 30 and plan.texts == 120 and plan.epochs == 1
    said = [record.getMessage() for record in caplog.records]
    line = next(i for i, message in enumerate(said) if message.startswith("heal: the cut at K ="))
    trained = next(i for i, message in enumerate(said) if message.startswith("healing the cut at layer"))
    assert line < trained and "of 120 texts" in said[line] and "min for K =" in said[line]
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"layer {result.export.layer} of {num}, healed" in report and "held-out cosine to the full model" in report
    assert "## Heal" in report and "layerpick heal" not in _notes(report)
    not_healed = result.export.heal["sweep"].get("not_healed", [])
    assert all(f"| {k} | - | - | not healed" in report for k in not_healed)
    reproduce = reproduce_commands(result)
    assert f"--calibration {texts}" in reproduce[0] and reproduce[-2].startswith("layerpick heal ")
    assert str(out / "model") in reproduce[-2] and ".heal" not in reproduce[-2]


def _notes(report: str) -> str:
    return "\n".join(line for line in report.splitlines() if line.startswith("| note |"))


def test_auto_keeps_a_plain_cut_where_select_picks_an_inner_layer_and_none_never_heals(tmp_path, monkeypatch):
    from types import SimpleNamespace

    select = SimpleNamespace(selected_layer=2, num_layers=4)
    config = RunConfig(heal=AUTO)
    monkeypatch.setattr(heal_stage, "peek_is_embedder", lambda *a, **k: True)
    assert heal_stage.resolve("m", config, select, None) is None
    last = SimpleNamespace(selected_layer=4, num_layers=4)
    assert heal_stage.resolve("m", config, last, None).layers == "2,3"
    assert heal_stage.resolve("m", dataclasses.replace(config, heal=None), last, None) is None
    monkeypatch.setattr(heal_stage, "peek_is_embedder", lambda *a, **k: False)  # a raw model: select decides
    assert heal_stage.resolve("m", config, last, None) is None


def test_run_heals_by_default_and_the_budget_is_checked_before_any_stage(embedder_and_texts, tmp_path):
    assert RunConfig().heal.layers == "auto" and RunConfig().heal_minutes > 0
    embedder, texts = embedder_and_texts
    for minutes in (0.0, -1.0, float("nan")):
        with pytest.raises(LayerpickError, match="--heal-minutes must be a positive"):
            bad = dataclasses.replace(config_for(texts), heal=AUTO, heal_minutes=minutes)
            run_workflow(str(embedder), tmp_path / "run", config=bad, progress=False)
        assert not (tmp_path / "run").exists()


def test_a_text_source_typed_relative_or_absolute_is_one_key(embedder_and_texts, monkeypatch):
    from layerpick.workflow.keys import stage_keys

    embedder, texts = embedder_and_texts
    monkeypatch.chdir(texts.parent)
    inputs = {"model": str(embedder), "model_content": "x", "calibration": "c", "tasks": []}
    relative = dataclasses.replace(config_for(texts), select=SelectConfig(calibration=texts.name, limit=24))
    absolute = dataclasses.replace(config_for(texts), select=SelectConfig(calibration=str(texts), limit=24))
    from layerpick.core.load_options import LoadOptions

    load = LoadOptions()
    assert stage_keys(str(embedder), load, relative, inputs) == stage_keys(str(embedder), load, absolute, inputs)
