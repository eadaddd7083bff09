"""Shared pieces of the heal tests: a small text file, the settings every tiny heal uses, and one heal of the tiny
Llama cut at layer 1 made once per session (the reference a resumed run must equal)."""

from __future__ import annotations

import pytest

from layerpick.core.calibration import load_calibration
from layerpick.healing import HealConfig, heal_model

TEXTS = 120  # 50 held out, 70 trained on: the smallest set a heal takes, so that each run stays short
LAYER = 1


@pytest.fixture(scope="session")
def heal_texts(tmp_path_factory):
    """A text file of TEXTS calibration texts, each cut at 200 characters (short sequences: a fast run)."""
    path = tmp_path_factory.mktemp("heal-texts") / "texts.txt"
    path.write_text("\n".join(text[:200] for text in load_calibration(None).texts[:TEXTS]), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_config(heal_texts):
    return HealConfig(fit_texts=str(heal_texts), epochs=2, batch_size=16, learning_rate=1e-3, progress=False)


@pytest.fixture(scope="session")
def healed(tiny_dirs, tiny_config, tmp_path_factory):
    """(report, output) of the tiny Llama healed at layer 1 without interruption."""
    output = tmp_path_factory.mktemp("healed") / "llama-l1"
    return heal_model(str(tiny_dirs("llama")), LAYER, output, tiny_config), output


def save_embedder(root, family: str, pooling: str = "mean", prompts=None, default_prompt=None, seed: int = 3):
    """A tiny `family` model saved as a trained sentence embedder ships: its pooling, Normalize, its prompts."""
    from sentence_transformers import SentenceTransformer, models

    from tests.testkit.tiny import save_tiny

    transformer = models.Transformer(str(save_tiny(family, root / family, seed=seed)), max_seq_length=48)
    pooling_module = models.Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling)
    modules = [transformer, pooling_module, models.Normalize()]
    embedder = SentenceTransformer(modules=modules, prompts=prompts or {}, default_prompt_name=default_prompt)
    embedder.save(str(root / "embedder"))
    return root / "embedder"


@pytest.fixture(scope="session")
def tiny_embedder(tmp_path_factory):
    """A tiny BERT saved as a trained sentence embedder would ship: mean pooling, Normalize, a default prompt."""
    return save_embedder(
        tmp_path_factory.mktemp("tiny-embedder"), "bert", prompts={"query": "query: "}, default_prompt="query"
    )
