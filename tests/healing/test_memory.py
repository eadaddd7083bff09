"""The heal's memory check (`healing.memory`): the floor is measured from what autograd keeps, grows with the
texts' length and the batch, and a heal whose floor is above the free memory stops before the teacher's pass with
one line, the batch size that fits, and nothing written."""

from __future__ import annotations

import logging

import pytest
import torch

from layerpick.healing import memory
from layerpick.healing.teacher import load_encoder

SHORT = [f"short text {i}" for i in range(8)]
LONG = [" ".join(["a much longer text with many words"] * 6) + f" {i}" for i in range(8)]


@pytest.fixture(scope="module")
def student(tiny_embedder):
    return load_encoder(str(tiny_embedder), "cpu")


def test_floor_grows_with_length_and_batch(student):
    short, long = memory.measure(student, SHORT), memory.measure(student, LONG + SHORT)
    assert 0 < short.per_text < long.per_text and long.tokens > short.tokens
    assert long.tokens == student.max_seq_length  # the longest texts are measured as the trainer cuts them
    trained = sum(p.numel() for p in student.parameters())
    assert long.state == trained * memory.OPTIMIZER_BYTES
    assert long.floor(64) - long.floor(32) == 32 * long.per_text


def test_probe_counts_the_activations_and_leaves_the_student_as_it_was(student):
    student.eval()
    torch.manual_seed(5)
    need = memory.measure(student, LONG)
    after = torch.rand(1)
    torch.manual_seed(5)
    assert torch.equal(after, torch.rand(1))  # the probe's dropout drew from a forked random state
    assert not student.training
    # one hidden state per block alone is hidden_size floats per token: what autograd keeps is more than that
    config = student[0].auto_model.config
    assert need.per_text > need.tokens * config.hidden_size * 4 * config.num_hidden_layers


def test_refused_when_the_floor_is_above_free_memory(student, monkeypatch):
    need = memory.measure(student, LONG)
    monkeypatch.setattr(memory, "HEADROOM_BASE", 8 * need.per_text)  # the tiny model's scale
    monkeypatch.setattr(memory, "free_bytes", lambda device: need.floor(64) - 1)
    with pytest.raises(memory.HealMemoryError) as refused:
        memory.check(need, 64, "cpu")
    message = str(refused.value)
    fit = need.largest_batch(need.floor(64) - 1)
    assert 1 <= fit < 64 and f"lower --batch-size to {fit} or less" in message and "\n" not in message
    room = memory.headroom
    assert (
        need.floor(fit) + room(need.floor(fit)) <= need.floor(64) - 1 < need.floor(fit + 1) + room(need.floor(fit + 1))
    )


def test_warned_when_the_floor_leaves_less_than_the_headroom(student, monkeypatch, caplog):
    need = memory.measure(student, LONG)
    room = memory.headroom(need.floor(64))
    assert room == memory.HEADROOM_BASE + need.floor(64) // 2  # a base and half the floor
    monkeypatch.setattr(memory, "free_bytes", lambda device: need.floor(64) + room - 1)
    with caplog.at_level(logging.WARNING, logger="layerpick.healing.memory"):
        memory.check(need, 64, "cpu")
    assert "it may run out of memory" in caplog.text
    caplog.clear()
    monkeypatch.setattr(memory, "free_bytes", lambda device: need.floor(64) + room)
    with caplog.at_level(logging.WARNING, logger="layerpick.healing.memory"):
        memory.check(need, 64, "cpu")
    assert caplog.text == ""


def test_not_even_one_text(student, monkeypatch):
    need = memory.measure(student, LONG)
    monkeypatch.setattr(memory, "HEADROOM_BASE", 100 * need.per_text)
    monkeypatch.setattr(memory, "free_bytes", lambda device: need.floor(1) + memory.headroom(need.floor(1)) - 1)
    with pytest.raises(memory.HealMemoryError, match="not even a batch of one text leaves"):
        memory.check(need, 200, "cpu")


def test_free_bytes_on_this_machine():
    import psutil

    free = memory.free_bytes("cpu")
    assert 0 < free <= psutil.virtual_memory().total
