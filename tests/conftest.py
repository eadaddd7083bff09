import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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
    from tiny import save_tiny

    cache = {}

    def get(family: str):
        if family not in cache:
            cache[family] = save_tiny(family, tmp_path_factory.mktemp(f"tiny-{family}"))
        return cache[family]

    return get
