"""`heal --blocks`: which of the teacher's blocks a healed cut starts from. The rule (spread keeps the first and the
last), its refusals, the config's per-block fields following the blocks placed, and a heal that starts from the
teacher's blocks: its weights before training are those blocks', and the healed export says which."""

from __future__ import annotations

import json

import pytest
import torch

from layerpick.core import surgery
from layerpick.exporting.metadata import read_metadata
from layerpick.healing import HealConfig, heal_model
from layerpick.healing import blocks as heal_blocks
from layerpick.healing.job import heal_command
from layerpick.healing.render import describe_blocks


@pytest.mark.parametrize(
    ("k", "num_layers", "expected"),
    [
        (3, 6, (1, 3, 6)),  # minilm-l6 at K = 3: the layout measured in heal.md
        (1, 6, (6,)),
        (2, 6, (1, 6)),
        (4, 6, (1, 2, 4, 6)),
        (5, 6, (1, 2, 3, 4, 6)),
        (6, 12, (1, 3, 5, 7, 9, 12)),
        (3, 30, (1, 15, 30)),
    ],
)
def test_spread_keeps_the_first_and_the_last_block_and_steps_evenly(k, num_layers, expected):
    assert heal_blocks.choose("spread", k, num_layers) == expected


def test_first_is_the_plain_cut_and_a_list_is_taken_as_written():
    assert heal_blocks.choose("first", 3, 6) == (1, 2, 3) and heal_blocks.is_first((1, 2, 3))
    assert heal_blocks.choose("1, 4,6", 3, 6) == (1, 4, 6) and not heal_blocks.is_first((1, 4, 6))


@pytest.mark.parametrize("text", ["1,3", "1,3,6,6", "3,1,6", "0,3,6", "1,3,7", "1,x,6", "1,٣,6", "", "1,,6"])
def test_a_list_that_is_not_k_rising_blocks_of_the_teacher_is_refused(text):
    with pytest.raises(heal_blocks.BlocksError, match="--blocks"):
        heal_blocks.choose(text, 3, 6)


def test_the_per_block_config_fields_follow_the_blocks_placed():
    from transformers import Gemma3TextConfig

    kinds = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"]
    full = Gemma3TextConfig(num_hidden_layers=4, layer_types=kinds)
    cut = surgery.cut_config(full, 2)
    assert cut.layer_types == kinds[:2]
    assert surgery.chosen_blocks_config(cut, full, [0, 2]).layer_types == ["sliding_attention", "full_attention"]
    assert cut.layer_types == kinds[:2]  # a copy: the cut's own config is unchanged


def test_a_spread_heal_starts_from_the_teachers_blocks(tiny_embedder, heal_texts, tmp_path):
    from sentence_transformers import SentenceTransformer

    from layerpick.healing import job

    started = {}
    original = job.train

    def train_and_remember(student, *args, **kwargs):  # the student as training receives it
        started["blocks"] = [block.state_dict() for block in surgery.blocks(student[0].auto_model)]
        started["blocks"] = [{name: value.clone() for name, value in block.items()} for block in started["blocks"]]
        return original(student, *args, **kwargs)

    config = HealConfig(fit_texts=str(heal_texts), epochs=1, batch_size=16, progress=False)
    job.train = train_and_remember
    try:
        report = heal_model(str(tiny_embedder), 2, tmp_path / "healed", config)
    finally:
        job.train = original
    teacher_blocks = surgery.blocks(SentenceTransformer(str(tiny_embedder), device="cpu")[0].auto_model)
    for place, block in enumerate((1, 4)):
        want = teacher_blocks[block - 1].state_dict()
        assert all(torch.equal(started["blocks"][place][name], want[name]) for name in want), place
    assert report.teacher["blocks"] == [1, 4]
    assert describe_blocks(report) == "2 of 4 (healed from blocks 1, 4)"
    metadata = read_metadata(tmp_path / "healed")
    assert metadata.heal["teacher"]["blocks"] == [1, 4] and metadata.kept == "2 of 4 (healed from blocks 1, 4)"
    assert "2 of 4 layers (healed from blocks 1, 4)" in (tmp_path / "healed" / "README.md").read_text()
    assert "--blocks" not in report.command  # the default is not written out


def test_the_command_line_names_blocks_unless_they_are_the_default(tmp_path):
    assert "--blocks first" in heal_command("m", 3, tmp_path / "o", HealConfig(blocks="first"), _load())
    assert "--blocks" not in heal_command("m", 3, tmp_path / "o", HealConfig(), _load())


def _load():
    from layerpick.core.models import LoadOptions

    return LoadOptions()


def test_a_gemma3_cut_from_spread_blocks_saves_their_attention_kinds(tmp_path, heal_texts):
    from tests.testkit.tiny import save_tiny

    source = save_tiny("gemma3", tmp_path / "gemma3")
    config_path = source / "config.json"
    saved = json.loads(config_path.read_text())
    kinds = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]
    config_path.write_text(json.dumps({**saved, "layer_types": kinds}))
    config = HealConfig(fit_texts=str(heal_texts), epochs=1, batch_size=16, progress=False)
    report = heal_model(str(source), 2, tmp_path / "healed", config)
    assert report.teacher["blocks"] == [1, 4]
    written = json.loads((tmp_path / "healed" / "config.json").read_text())
    assert written["num_hidden_layers"] == 2 and written["layer_types"] == ["sliding_attention", "full_attention"]


def test_seat_weights_copies_the_named_blocks_in_order():
    from tests.testkit.tiny import make_model

    teacher, student = make_model("bert"), make_model("bert", seed=1)
    surgery.truncate_(student, 2)
    heal_blocks.seat_weights(student, teacher, (2, 4))
    for place, block in enumerate((2, 4)):
        got, want = surgery.blocks(student)[place].state_dict(), surgery.blocks(teacher)[block - 1].state_dict()
        assert all(torch.equal(got[name], want[name]) for name in want)
