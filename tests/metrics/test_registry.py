"""Tests for the metric registry in layerpick.metrics."""

import dataclasses

import pytest

from layerpick.metrics import (
    MetricSpec,
    UnknownMetricError,
    get_metric,
    list_metrics,
    parse_metrics,
)

NAMES = ["prompt-entropy", "dataset-entropy", "dime", "infonce", "lidar", "curvature"]


def test_names_and_fields():
    specs = list_metrics()
    assert [s.name for s in specs] == NAMES
    for spec in specs:
        assert spec.direction in {"min", "max"}
        assert spec.needs and spec.needs <= {"tokens", "pooled", "views"}
        assert isinstance(spec.needs, frozenset)
        assert spec.description and "\n" not in spec.description


def test_directions():
    directions = {s.name: s.direction for s in list_metrics()}
    assert directions == {
        "prompt-entropy": "min",
        "dataset-entropy": "min",
        "dime": "min",
        "infonce": "min",
        "lidar": "max",
        "curvature": "min",
    }


def test_needs():
    assert get_metric("prompt-entropy").needs == {"tokens"}
    assert get_metric("curvature").needs == {"tokens"}
    assert get_metric("dataset-entropy").needs == {"pooled"}
    for name in ("dime", "infonce", "lidar"):
        assert get_metric(name).needs == {"views"}


def test_spec_is_frozen_and_validated():
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_metric("dime").name = "x"
    with pytest.raises(ValueError):
        MetricSpec("x", "d", frozenset({"tokens"}), "up")


def test_unknown_metric_suggests():
    with pytest.raises(UnknownMetricError) as info:
        get_metric("prompt_entropy")
    message = str(info.value)
    assert "did you mean 'prompt-entropy'" in message
    assert all(name in message for name in NAMES)
    assert isinstance(info.value, ValueError)


def test_unknown_metric_without_close_match():
    with pytest.raises(UnknownMetricError) as info:
        get_metric("zzzzzz")
    assert "did you mean" not in str(info.value)


def test_parse_metrics():
    assert [s.name for s in parse_metrics("dime, lidar")] == ["dime", "lidar"]
    assert [s.name for s in parse_metrics("curvature,,curvature ")] == ["curvature"]
    with pytest.raises(UnknownMetricError):
        parse_metrics("dime,limdar")
    with pytest.raises(ValueError):
        parse_metrics(" , ")
