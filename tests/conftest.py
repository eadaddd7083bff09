"""Fixtures every test shares: an isolated environment and tiny models built once per session."""

import os

import pytest

from tests.testkit.paths import SHARED_DATA  # noqa: F401 - where test modules find the shared task data


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
