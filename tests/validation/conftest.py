import pytest

from tests.testkit.tiny import make_loaded


@pytest.fixture
def tiny_model(monkeypatch):
    """Every model name loads one tiny random BERT (4 layers), so no download or real weights are needed."""
    loaded = make_loaded("bert")
    monkeypatch.setattr("layerpick.validation.sources.load_model", lambda name, options: loaded)
    return loaded


@pytest.fixture
def tiny_llama(monkeypatch):
    loaded = make_loaded("llama")
    monkeypatch.setattr("layerpick.validation.sources.load_model", lambda name, options: loaded)
    return loaded
