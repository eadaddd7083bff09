"""select's peak memory grows with the pooled states, not with depth x texts x tokens (issue 22, item 2).

One tiny random 12-block Llama runs the same select (token-level metrics included) on 32 and on 256 long texts,
each in a fresh process: the growth of peak RSS between the two must stay far below what keeping every layer's
token states of the extra texts would take, because the pass keeps only pooled states (13 x texts x hidden).
The same holds for depth: a 24-block model against a 4-block one on the same 256 texts."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

LAYERS, TOKENS, HIDDEN, BATCH = 12, 128, 128, 8
FEW, MANY = 32, 256
SCRIPT = textwrap.dedent("""
    import json, resource, sys
    from pathlib import Path
    import transformers as tf
    from tests.testkit.tiny import make_tokenizer
    from layerpick.core.collect import CollectConfig
    from layerpick.selection.config import SelectConfig
    from layerpick.selection.job import run_select

    layers, texts, tokens, hidden, batch, work = (*map(int, sys.argv[1:6]), Path(sys.argv[6]))
    config = tf.LlamaConfig(vocab_size=320, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                            num_key_value_heads=2, intermediate_size=2 * hidden, max_position_embeddings=tokens + 8)
    model_dir = work / "llama"
    tf.AutoModel.from_config(config).save_pretrained(model_dir)
    make_tokenizer("llama").save_pretrained(model_dir)
    calibration = work / "calibration.txt"
    words = "the quick brown fox jumps over the lazy dog and numbers like 42 appear in text too".split()
    calibration.write_text("\\n".join(" ".join(words[(i + j) % len(words)] for j in range(2 * tokens))
                                     for i in range(texts)) + "\\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    report = run_select(str(model_dir), config=SelectConfig(
        calibration=str(calibration), limit=None, transform="none",
        metrics="prompt-entropy,curvature,dataset-entropy",
        collect=CollectConfig(batch_size=batch, max_length=tokens, progress=False)))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"growth": peak - before, "layers": report.num_layers}))
""")


def _select_growth(texts: int, work, layers: int = LAYERS) -> dict:
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(layers), str(texts), str(TOKENS), str(HIDDEN), str(BATCH), str(work)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.full  # how memory grows is the science's measurement (about a minute each); the full tier runs it
def test_peak_memory_of_select_does_not_grow_with_depth_times_texts_times_tokens(tmp_path):
    few, many = _select_growth(FEW, tmp_path / "few"), _select_growth(MANY, tmp_path / "many")
    assert few["layers"] == many["layers"] == LAYERS
    token_states = (LAYERS + 1) * (MANY - FEW) * TOKENS * HIDDEN * 4  # the extra texts' token states: 182 MB
    pooled = (LAYERS + 1) * (MANY - FEW) * HIDDEN * 4  # their pooled states: 1.4 MB
    extra = many["growth"] - few["growth"]
    assert extra < pooled + 40 * 2**20 < token_states / 4, (extra / 2**20, token_states / 2**20)


SHALLOW, DEEP = 4, 24


@pytest.mark.full  # how memory grows is the science's measurement (about a minute each); the full tier runs it
def test_peak_memory_of_select_grows_with_depth_by_the_pooled_states_not_the_token_states(tmp_path):
    shallow = _select_growth(MANY, tmp_path / "shallow", SHALLOW)
    deep = _select_growth(MANY, tmp_path / "deep", DEEP)
    assert (shallow["layers"], deep["layers"]) == (SHALLOW, DEEP)
    token_states = (DEEP - SHALLOW) * MANY * TOKENS * HIDDEN * 4  # the extra layers' token states: 335 MB
    # what the extra layers may add: their weights (~0.6 MB a block), pooled states (0.13 MB a layer) and one
    # batch's captured states (0.5 MB a layer, a few copies): well under 60 MB
    extra = deep["growth"] - shallow["growth"]
    assert extra < 60 * 2**20 < token_states / 4, (extra / 2**20, token_states / 2**20)
