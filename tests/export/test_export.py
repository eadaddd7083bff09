"""`layerpick export` on tiny models of every family: the saved directory encodes exactly layer K of the full
model, blocks K.. are physically gone, the files are in the legacy-compatible form, the output is atomic, and
the CLI maps bad input to one line and exit code 1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers as tf
from safetensors import safe_open
from sentence_transformers import SentenceTransformer
from typer.testing import CliRunner

from layerpick.core import surgery
from layerpick.core.collect import CollectConfig, collect
from layerpick.core.models import LoadOptions, load_model
from layerpick.errors import (
    LayerpickError,
    LayerRangeError,
    UnsupportedArchitectureError,
)
from layerpick.exporting.config import ExportConfig
from layerpick.exporting.errors import ExportError, ParityError
from layerpick.exporting.job import export_model
from layerpick.exporting.facts import ExportFacts, reproduce_command
from layerpick.exporting.model_card import render_model_card
from layerpick._util.output_errors import OutputExistsError
from layerpick.exporting.st_layout import (
    POOLING_FLAGS,
    layout_problems,
    legacy_rope_keys,
)
from tests.testkit.tiny import CONFIGS, LAYERS, TEXTS, make_model, make_tokenizer

FAMILIES = sorted(CONFIGS)
ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).parent / "layerpick"  # the console script of the running environment


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    """A tiny model of `family` saved with save_pretrained (model + tokenizer), one directory per family."""
    made: dict[str, Path] = {}

    def make(family: str, *, chat_template: str | None = None, drop_pad: bool = False) -> Path:
        key = f"{family}-{bool(chat_template)}-{drop_pad}"
        if key not in made:
            path = tmp_path_factory.mktemp(f"tiny-{key}")
            make_model(family).save_pretrained(path)
            tokenizer = make_tokenizer(family)
            if chat_template:
                tokenizer.chat_template = chat_template
            if drop_pad:
                tokenizer.pad_token = None
            tokenizer.save_pretrained(path)
            made[key] = path
        return made[key]

    return make


def reference(source: Path, k: int, pooling: str = "mean", normalize: bool = False, max_length: int = 512):
    """Layer k of the FULL model, as layerpick.core.collect pools it."""
    loaded = load_model(str(source))
    states = collect(
        loaded, TEXTS, CollectConfig(pooling=pooling, batch_size=2, max_length=max_length, progress=False)
    ).layer(k)
    return torch.nn.functional.normalize(states, dim=-1) if normalize else states


def encode(directory: Path) -> torch.Tensor:
    return SentenceTransformer(str(directory), device="cpu").encode(TEXTS, convert_to_tensor=True, batch_size=2)


def saved_block_indices(directory: Path, blocks_path: str) -> set[int]:
    """The block numbers whose tensors are in model.safetensors."""
    pattern = re.compile(rf"(?:^|\.){re.escape(blocks_path)}\.(\d+)\.")
    with safe_open(str(directory / "model.safetensors"), "pt") as weights:
        return {int(m.group(1)) for key in weights.keys() if (m := pattern.search(key))}


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("k", [1, LAYERS - 1])
def test_export_reproduces_layer_k_of_the_full_model(family, k, tiny_dir, tmp_path):
    source = tiny_dir(family)
    out = tmp_path / "out"
    result = export_model(str(source), k, out, ExportConfig(progress=False))
    assert (result.layer, result.num_layers, result.pooling) == (k, LAYERS, "mean")
    # rtol 1e-4, atol 1e-5: float32 cut model vs the full model's layer k, reductions in another order
    torch.testing.assert_close(
        encode(out), reference(source, k, max_length=result.max_seq_length), rtol=1e-4, atol=1e-5
    )
    # parity_tolerance: the export's own float32 limit (1e-5 of max(1, |value|)), float32 round-off
    assert result.parity_max_abs_diff <= result.parity_tolerance
    blocks_path = surgery.family_for(tf.AutoConfig.from_pretrained(source)).blocks_path
    assert saved_block_indices(out, blocks_path) == set(range(k))  # blocks k.. are physically gone
    assert result.params_cut < result.params_full
    config = tf.AutoConfig.from_pretrained(out)
    assert config.num_hidden_layers == k
    if getattr(config, "layer_types", None) is not None:
        assert len(config.layer_types) == k
    assert layout_problems(out) == []
    assert leftovers(tmp_path) == ["out"]


@pytest.mark.parametrize(("family", "pooling"), [("llama", "lasttoken"), ("qwen3", "lasttoken"), ("bert", "cls")])
def test_other_poolings(family, pooling, tiny_dir, tmp_path):
    source = tiny_dir(family)
    result = export_model(str(source), 2, tmp_path / "out", ExportConfig(pooling=pooling, progress=False))
    flags = json.loads((tmp_path / "out" / "1_Pooling" / "config.json").read_text())
    assert flags[POOLING_FLAGS[pooling]] and sum(flags[f] for f in POOLING_FLAGS.values()) == 1
    torch.testing.assert_close(  # rtol 1e-4, atol 1e-5: float32 cut model vs the full model's layer k
        encode(tmp_path / "out"), reference(source, 2, pooling, max_length=result.max_seq_length), rtol=1e-4, atol=1e-5
    )


def test_normalize_adds_the_module_and_unit_vectors(tiny_dir, tmp_path):
    source = tiny_dir("gpt2")
    result = export_model(str(source), 2, tmp_path / "out", ExportConfig(normalize=True, progress=False))
    embeddings = encode(tmp_path / "out")
    # assert_close's float32 defaults (rtol 1.3e-6, atol 1e-5): unit norm, float32 rounding
    torch.testing.assert_close(embeddings.norm(dim=-1), torch.ones(len(TEXTS)))
    torch.testing.assert_close(  # rtol 1e-4, atol 1e-5: float32 cut model vs the full model's layer k
        embeddings, reference(source, 2, normalize=True, max_length=result.max_seq_length), rtol=1e-4, atol=1e-5
    )
    types = [m["type"] for m in json.loads((tmp_path / "out" / "modules.json").read_text())]
    assert types[-1] == "sentence_transformers.models.Normalize"


def test_saved_files_have_every_legacy_key(tiny_dir, tmp_path):
    out = tmp_path / "out"
    export_model(str(tiny_dir("llama")), 2, out, ExportConfig(max_seq_length=64, progress=False))
    modules = json.loads((out / "modules.json").read_text())
    assert [m["type"] for m in modules] == [
        "sentence_transformers.models.Transformer",
        "sentence_transformers.models.Pooling",
    ]
    assert [m["path"] for m in modules] == ["", "1_Pooling"]
    pooling = json.loads((out / "1_Pooling" / "config.json").read_text())
    assert pooling["word_embedding_dimension"] == 32 and pooling["include_prompt"] is True
    assert {key: pooling[key] for key in POOLING_FLAGS.values()} == {
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": False,
    }
    assert json.loads((out / "sentence_bert_config.json").read_text()) == {"max_seq_length": 64, "do_lower_case": False}
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["LlamaModel"]
    assert config["rope_theta"] == config["rope_parameters"]["rope_theta"]  # transformers 4 reads rope_theta
    tokenizer_config = json.loads((out / "tokenizer_config.json").read_text())
    assert tokenizer_config["tokenizer_class"] == "PreTrainedTokenizerFast"  # a name transformers 4 knows
    assert tokenizer_config["model_input_names"] == ["input_ids", "attention_mask"]  # no token_type_ids
    assert "chat_template" not in tokenizer_config and "max_length" not in tokenizer_config
    assert json.loads((out / "tokenizer.json").read_text())["truncation"] is None
    assert tokenizer_config["padding_side"] == "right" and tokenizer_config["pad_token"] == "<pad>"
    assert (out / "tokenizer.json").is_file()
    assert not list(out.rglob("*.bin")) and (out / "model.safetensors").is_file()
    assert SentenceTransformer(str(out), device="cpu").max_seq_length == 64


def test_layout_problems_names_what_is_missing(tiny_dir, tmp_path):
    out = tmp_path / "out"
    export_model(str(tiny_dir("llama")), 2, out, ExportConfig(progress=False))
    pooling = out / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    del config["pooling_mode_lasttoken"]
    pooling.write_text(json.dumps(config))
    (out / "tokenizer.json").unlink()
    assert layout_problems(out) == ["missing tokenizer.json"]
    (out / "tokenizer.json").write_text("{}")
    assert layout_problems(out) == ["1_Pooling/config.json lacks pooling_mode_lasttoken"]


def test_chat_template_is_removed(tiny_dir, tmp_path):
    template = "{% for m in messages %}<s>system: be brief</s><s>{{ m['content'] }}</s>{% endfor %}"
    source = tiny_dir("llama", chat_template=template)
    assert load_model(str(source)).tokenizer.chat_template
    out = tmp_path / "out"
    result = export_model(str(source), 2, out, ExportConfig(progress=False))
    assert not list(out.glob("chat_template*"))
    assert "chat_template" not in json.loads((out / "tokenizer_config.json").read_text())
    model = SentenceTransformer(str(out), device="cpu")
    assert "message" not in model[0].modality_config
    torch.testing.assert_close(  # rtol 1e-4, atol 1e-5: float32 cut model vs the full model's layer k
        encode(out), reference(source, 2, max_length=result.max_seq_length), rtol=1e-4, atol=1e-5
    )
    assert any("chat template" in note for note in result.notes)


def test_missing_pad_token_becomes_eos(tiny_dir, tmp_path):
    out = tmp_path / "out"
    export_model(str(tiny_dir("gpt2", drop_pad=True)), 2, out, ExportConfig(progress=False))
    assert json.loads((out / "tokenizer_config.json").read_text())["pad_token"] == "</s>"


def test_metadata_and_card(tiny_dir, tmp_path):
    source = tiny_dir("qwen2")
    out = tmp_path / "out"
    export_model(str(source), 3, out, ExportConfig(progress=False))
    meta = json.loads((out / "layerpick.json").read_text())
    assert (meta["layer"], meta["num_layers"], meta["pooling"], meta["representation"]) == (3, 4, "mean", "exported")
    assert meta["source"]["model"] == str(source) and meta["selection"] == {"method": "manual"}
    assert set(meta["versions"]) >= {"torch", "transformers", "sentence-transformers", "layerpick"}
    assert meta["parity"]["passed"] and meta["parity"]["texts"] == 8
    assert meta["command"] == f"layerpick export {source} --layer 3 --output {out}"
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: sentence-transformers\npipeline_tag: sentence-similarity\n")
    assert "the first 3 of 4 layers" in card and "Manually" in card and meta["command"] in card


def make_report(source: Path, **overrides) -> dict:
    report = {
        "format": "layerpick-select/1",
        "model": str(source),
        "num_layers": LAYERS,
        "selected_layer": 2,
        "pooling": "lasttoken",
        "representation": "exported",
        "rule": "argmin-prompt-entropy",
        "scores": {"prompt_entropy": [0.9, 0.7, 0.4, 0.6, 0.8], "dime": [None, 0.1, 0.2, 0.3, 0.1]},
        "calibration": {"source": "embedded", "count": 64},
        "validation": {"STSBenchmark": {"layer 2": 0.51, "layer 4": 0.37}},
    }
    return report | overrides


def test_report_gives_layer_pooling_and_representation(tiny_dir, tmp_path):
    source = tiny_dir("llama")
    report = tmp_path / "report.json"
    report.write_text(json.dumps(make_report(source)))
    out = tmp_path / "out"
    result = export_model(str(source), None, out, ExportConfig(report=report, progress=False))
    assert (result.layer, result.pooling) == (2, "lasttoken")
    torch.testing.assert_close(  # rtol 1e-4, atol 1e-5: float32 cut model vs the full model's layer k
        encode(out), reference(source, 2, "lasttoken", max_length=result.max_seq_length), rtol=1e-4, atol=1e-5
    )
    meta = json.loads((out / "layerpick.json").read_text())
    assert meta["selection"]["rule"] == "argmin-prompt-entropy" and meta["selection"]["scores"]["dime"][2] == 0.2
    card = (out / "README.md").read_text()
    assert "argmin-prompt-entropy" in card and "## Validation" in card and "0.5100" in card
    assert f"--report {report}" in meta["command"]


@pytest.mark.parametrize("change", [{"model": "some/other-model"}, {"num_layers": 12}])
def test_report_for_another_model_is_refused(change, tiny_dir, tmp_path):
    source = tiny_dir("llama")
    report = tmp_path / "report.json"
    report.write_text(json.dumps(make_report(source, **change)))
    with pytest.raises(ExportError, match="report .* is for"):
        export_model(str(source), None, tmp_path / "out", ExportConfig(report=report, progress=False))
    assert leftovers(tmp_path) == ["report.json"]


def test_report_pooling_conflict_and_bad_reports(tiny_dir, tmp_path):
    source = tiny_dir("llama")
    report = tmp_path / "report.json"
    report.write_text(json.dumps(make_report(source)))
    with pytest.raises(ExportError, match="contradicts the report"):
        export_model(str(source), None, tmp_path / "out", ExportConfig(report=report, pooling="mean", progress=False))
    report.write_text(json.dumps({"format": "layerpick-select/1", "model": str(source)}))
    with pytest.raises(ExportError, match="missing num_layers"):
        export_model(str(source), None, tmp_path / "out", ExportConfig(report=report, progress=False))
    with pytest.raises(ExportError, match="report not found"):
        export_model(str(source), None, tmp_path / "out", ExportConfig(report=tmp_path / "nope.json", progress=False))


@pytest.mark.parametrize("k", [0, -1, LAYERS + 1])
def test_layer_out_of_range(k, tiny_dir, tmp_path):
    with pytest.raises(LayerRangeError, match="out of range"):
        export_model(str(tiny_dir("llama")), k, tmp_path / "out", ExportConfig(progress=False))
    assert leftovers(tmp_path) == []


def test_layer_range_message_states_the_range(tiny_dir, tmp_path):
    with pytest.raises(LayerRangeError, match=r"layers 1\.\.4"):
        export_model(str(tiny_dir("llama")), 5, tmp_path / "out", ExportConfig(progress=False))


def test_exactly_one_of_layer_and_report(tiny_dir, tmp_path):
    with pytest.raises(ExportError, match="exactly one"):
        export_model(str(tiny_dir("llama")), None, tmp_path / "out", ExportConfig(progress=False))
    with pytest.raises(ExportError, match="exactly one"):
        export_model(
            str(tiny_dir("llama")), 2, tmp_path / "out", ExportConfig(report=tmp_path / "r.json", progress=False)
        )


def test_raw_representation(tiny_dir, tmp_path):
    with pytest.raises(ExportError, match="'raw' cannot be exported"):
        export_model(str(tiny_dir("llama")), 2, tmp_path / "out", ExportConfig(representation="raw", progress=False))
    assert leftovers(tmp_path) == []
    export_model(
        str(tiny_dir("bert")), 2, tmp_path / "out", ExportConfig(representation="raw", progress=False)
    )  # raw == exported


def test_existing_output_needs_overwrite(tiny_dir, tmp_path):
    source, out = tiny_dir("llama"), tmp_path / "out"
    export_model(str(source), 1, out, ExportConfig(progress=False))
    with pytest.raises(OutputExistsError, match="already holds a layerpick export"):
        export_model(str(source), 2, out, ExportConfig(progress=False))
    assert json.loads((out / "layerpick.json").read_text())["layer"] == 1
    export_model(str(source), 2, out, ExportConfig(overwrite=True, progress=False))
    assert json.loads((out / "layerpick.json").read_text())["layer"] == 2
    assert leftovers(tmp_path) == ["out"]


def test_an_empty_existing_folder_is_used(tiny_dir, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    export_model(str(tiny_dir("llama")), 1, out, ExportConfig(progress=False))
    assert json.loads((out / "layerpick.json").read_text())["layer"] == 1
    assert leftovers(tmp_path) == ["out"]


def test_overwrite_refuses_a_foreign_directory(tiny_dir, tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(OutputExistsError, match="holds no earlier layerpick export"):
        export_model(str(tiny_dir("llama")), 2, foreign, ExportConfig(overwrite=True, progress=False))
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_failure_midway_leaves_nothing(tiny_dir, tmp_path, monkeypatch):
    import layerpick.exporting.st_layout as st_format

    def broken(*args, **kwargs):
        raise RuntimeError("disk full (injected)")

    monkeypatch.setattr(st_format, "rewrite_legacy", broken)
    out = tmp_path / "new" / "nested" / "out"
    with pytest.raises(RuntimeError, match="injected"):
        export_model(str(tiny_dir("llama")), 2, out, ExportConfig(progress=False))
    assert leftovers(tmp_path) == []  # no target, no temporary directory, no parents created for it


def test_parity_failure_leaves_nothing(tiny_dir, tmp_path, monkeypatch):
    import layerpick.exporting.parity as parity

    real = parity.reference_embeddings
    # 1e-3: well above the float32 parity tolerance (1e-5 of max(1, |value|)), so parity must fail
    monkeypatch.setattr(parity, "reference_embeddings", lambda *a, **k: real(*a, **k) + 1e-3)
    with pytest.raises(ParityError, match="parity failed"):
        export_model(str(tiny_dir("llama")), 2, tmp_path / "out", ExportConfig(progress=False))
    assert leftovers(tmp_path) == []


def test_overwrite_keeps_the_old_export_when_the_new_one_fails(tiny_dir, tmp_path, monkeypatch):
    import layerpick.exporting.parity as parity

    source, out = tiny_dir("llama"), tmp_path / "out"
    export_model(str(source), 1, out, ExportConfig(progress=False))
    fake = torch.zeros(len(parity.DEFAULT_PARITY_TEXTS), 32) + 5
    monkeypatch.setattr(parity, "reference_embeddings", lambda *a, **k: fake)
    with pytest.raises(ParityError):
        export_model(str(source), 2, out, ExportConfig(overwrite=True, progress=False))
    assert json.loads((out / "layerpick.json").read_text())["layer"] == 1
    assert leftovers(tmp_path) == ["out"]


def test_legacy_rope_keys():
    assert legacy_rope_keys({"rope_parameters": {"rope_theta": 1e5, "rope_type": "default"}}) == {"rope_theta": 1e5}
    gemma = {
        "rope_parameters": {
            "full_attention": {"rope_theta": 1e6, "rope_type": "default"},
            "sliding_attention": {"rope_theta": 1e4, "rope_type": "default"},
        }
    }
    assert legacy_rope_keys(gemma) == {"rope_theta": 1e6, "rope_local_base_freq": 1e4}
    linear = {"rope_parameters": {"rope_theta": 1e4, "rope_type": "linear", "factor": 2.0}}
    assert legacy_rope_keys(linear) == {"rope_theta": 1e4, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}
    assert legacy_rope_keys({}) == {}


def test_reproduce_command_and_card_front_matter():
    options = LoadOptions(dtype="bfloat16", gguf_file="m.gguf", trust_remote_code=True)
    command = reproduce_command(
        "smollm2-135m",
        "out dir",
        layer=10,
        report_path=None,
        pooling="mean",
        normalize=True,
        max_seq_length=128,
        load_options=options,
    )
    assert command == (
        "layerpick export smollm2-135m --layer 10 --output 'out dir' --pooling mean --normalize "
        "--max-seq-length 128 --dtype bfloat16 --gguf-file m.gguf --trust-remote-code"
    )
    facts = ExportFacts(
        model="smollm2-135m",
        source_path="/x",
        revision=None,
        layer=10,
        num_layers=30,
        architecture="LlamaModel",
        representation="exported",
        pooling="mean",
        normalize=False,
        max_seq_length=512,
        params_full=100,
        params_cut=40,
        weights_bytes=10,
        parity_max_abs_diff=0.0,
        parity_tolerance=1e-5,
        parity_texts=8,
        command=command,
        notes=("4-bit GGUF",),
        speedup={"texts/s": {"full": 10.0, "cut": 25.0}},
    )
    card = render_model_card(facts)
    assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in card
    assert "**the first 10 of 30 layers**" in card and "## Speed" in card and "Note: 4-bit GGUF" in card


# ---------------------------------------------------------------- CLI


def test_cli_export(tiny_dir, tmp_path):
    from layerpick.cli.app import app

    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["export", str(tiny_dir("mamba")), "--layer", "2", "--output", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert "first 2 of 4" in result.output and "parity" in result.output
    # rtol 1e-4, atol 1e-5: float32 cut model vs the full model's layer k
    torch.testing.assert_close(encode(out), reference(tiny_dir("mamba"), 2), rtol=1e-4, atol=1e-5)


def test_cli_export_with_report_and_no_model(tiny_dir, tmp_path):
    from layerpick.cli.app import app

    report = tmp_path / "report.json"
    report.write_text(json.dumps(make_report(tiny_dir("bert"), pooling="cls")))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["export", "--report", str(report), "--output", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "layerpick.json").read_text())["pooling"] == "cls"


def test_cli_bad_input_raises_layerpick_errors(tiny_dir, tmp_path):
    from layerpick.cli.app import app

    result = CliRunner().invoke(
        app, ["export", str(tiny_dir("llama")), "--layer", "9", "--output", str(tmp_path / "o")]
    )
    assert isinstance(result.exception, LayerpickError) and result.exit_code != 0
    assert leftovers(tmp_path) == []


@pytest.fixture
def unknown_family_dir(tmp_path):
    config = tf.OPTConfig(
        vocab_size=320,
        hidden_size=32,
        num_hidden_layers=2,
        ffn_dim=64,
        num_attention_heads=4,
        max_position_embeddings=64,
        word_embed_proj_dim=32,
    )
    path = tmp_path / "opt"
    tf.AutoModel.from_config(config).save_pretrained(path)
    make_tokenizer("llama").save_pretrained(path)
    with pytest.raises(UnsupportedArchitectureError):
        load_model(str(path))
    return path


@pytest.mark.slow
def test_entry_point_bad_input(tiny_dir, unknown_family_dir, tmp_path):
    """Exit code 1, one line on stderr, no output left behind: each case through the entry point's `run` in this
    process, and the first through the installed `layerpick` script too."""
    from tests.testkit.cli import invoke

    source = tiny_dir("llama")
    report = tmp_path / "report.json"
    report.write_text(json.dumps(make_report(source, model="other/model")))
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("keep")
    cases = {
        "range": [str(source), "--layer", "7", "--output", str(tmp_path / "o1")],
        "report": [str(source), "--report", str(report), "--output", str(tmp_path / "o2")],
        "exists": [str(source), "--layer", "2", "--output", str(existing)],
        "family": [str(unknown_family_dir), "--layer", "1", "--output", str(tmp_path / "o4")],
        "template": [str(source), "--layer", "2", "--prompt", "eol,sum", "--output", str(tmp_path / "o5")],
        "placeholder": [str(source), "--layer", "2", "--prompt", "{text} {text}", "--output", str(tmp_path / "o6")],
        "room": [
            str(source),
            "--layer",
            "2",
            "--prompt",
            "eol",
            "--max-seq-length",
            "8",
            "--output",
            str(tmp_path / "o7"),
        ],
    }
    expected = {
        "range": "out of range",
        "report": "is for model",
        "exists": "holds no earlier layerpick export",
        "family": "unsupported architecture",
        "template": "unknown prompt 'eol,sum'",
        "placeholder": "exactly one {text}",
        "room": "no room for text",
    }
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    env.pop("LAYERPICK_DEBUG", None)
    script = subprocess.run(
        [str(ENTRY_POINT), "export", *cases["range"]], capture_output=True, text=True, env=env, timeout=120
    )
    runs = {name: invoke("export", *args) for name, args in cases.items()}
    for name, run in [("range", script), *runs.items()]:
        assert run.returncode == 1, (name, run.stderr)
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("layerpick: error:") and expected[name] in lines[0], (
            name,
            run.stderr,
        )
    assert sorted(leftovers(tmp_path)) == ["existing", "opt", "report.json"]
    assert (existing / "keep.txt").read_text() == "keep"


def test_card_renders_a_validate_json_table():
    validation = {
        "tasks": {
            "STSBenchmark": {"main_score_by_layer": [None, 0.3, 0.5, 0.4]},
            "SICK-R": {"main_score_by_layer": [None, 0.2, 0.45, 0.5]},
        },
        "mean_by_layer": [None, 0.25, 0.475, 0.45],
    }
    facts = ExportFacts(
        model="m/x",
        source_path="/x",
        revision="abc",
        layer=2,
        num_layers=3,
        architecture="LlamaModel",
        representation="exported",
        pooling="mean",
        normalize=False,
        max_seq_length=512,
        params_full=100,
        params_cut=70,
        weights_bytes=10,
        parity_max_abs_diff=0.0,
        parity_tolerance=1e-5,
        parity_texts=8,
        command="layerpick export m/x --report r.json --output o",
        report={"rule": "max-dime", "selected_layer": 2, "scores": {}, "validation": validation},
        report_path="r.json",
    )
    card = render_model_card(facts)
    assert "| task | layer 2 | layer 3 | best layer |" in card
    assert (
        "| STSBenchmark | 0.5000 | 0.4000 | 2 (0.5000) |" in card and "| mean | 0.4750 | 0.4500 | 2 (0.4750) |" in card
    )
    assert "base_model: m/x" in card and "revision abc" in card


# ---------------------------------------------------------------- prompt templates


def prompted_reference(
    source: Path, k: int, prompt: str, pooling: str | None = None, max_length: int = 512, texts=TEXTS
):
    """Layer k of the FULL model on the wrapped texts, as layerpick.core.collect pools it."""
    from layerpick.core.prompts import parse_prompt

    config = CollectConfig(
        pooling=pooling, batch_size=2, max_length=max_length, progress=False, prompt=parse_prompt(prompt)
    )
    return collect(load_model(str(source)), list(texts), config).layer(k)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_prompted_export_applies_the_template_itself(family, tiny_dir, tmp_path):
    """Plain texts sent to the export give layer K of the full model on the wrapped texts (last-token pooling,
    padded batches); the saved tokenizer carries the template for every reader."""
    from tokenizers import Tokenizer

    source, out = tiny_dir(family), tmp_path / "out"
    result = export_model(str(source), 2, out, ExportConfig(prompt="eol", progress=False))
    assert result.pooling == "lasttoken"
    torch.testing.assert_close(  # rtol 1e-4, atol 1e-5: float32 cut model vs the full model's layer k, prompted
        encode(out), prompted_reference(source, 2, "eol", max_length=result.max_seq_length), rtol=1e-4, atol=1e-5
    )
    # allclose defaults (rtol 1e-5, atol 1e-8): the prompt moves vectors far beyond round-off
    assert not torch.allclose(encode(out), reference(source, 2, "lasttoken", max_length=result.max_seq_length))
    st_ids = SentenceTransformer(str(out), device="cpu").tokenize([TEXTS[0]])["input_ids"][0].tolist()
    assert Tokenizer.from_file(str(out / "tokenizer.json")).encode(TEXTS[0]).ids == st_ids  # the Rust reader (TEI)
    assert tf.AutoTokenizer.from_pretrained(out)(TEXTS[0])["input_ids"] == st_ids
    assert json.loads((out / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"
    meta = json.loads((out / "layerpick.json").read_text())
    assert (
        meta["prompt"]["name"] == "eol" and meta["prompt"]["template"] == 'This sentence : "{text}" means in one word:"'
    )
    assert meta["prompt"]["edges"]["texts"] == 8 and meta["parity"]["passed"]
    assert "--prompt eol" in meta["command"] and "## Prompt" in (out / "README.md").read_text()


def test_prompted_export_keeps_the_suffix_of_a_truncated_text(tiny_dir, tmp_path):
    source, out = tiny_dir("llama"), tmp_path / "out"
    long_texts = [" ".join(TEXTS) * 3, TEXTS[0]]
    result = export_model(
        str(source),
        3,
        out,
        ExportConfig(prompt="Represent <{text}> now:", max_seq_length=40, parity_texts=long_texts, progress=False),
    )
    model = SentenceTransformer(str(out), device="cpu")
    ids = model.tokenize(long_texts[:1])["input_ids"][0].tolist()
    suffix = tf.AutoTokenizer.from_pretrained(out).convert_ids_to_tokens(ids[-4:])
    assert len(ids) == 40 and "".join(suffix).replace("Ġ", " ").endswith("now:")
    torch.testing.assert_close(  # rtol 1e-4, atol 1e-5: float32 cut model vs the full model's layer k, prompted
        model.encode(long_texts, convert_to_tensor=True),
        prompted_reference(source, 3, "Represent <{text}> now:", max_length=40, texts=long_texts),
        rtol=1e-4,
        atol=1e-5,
    )
    assert result.max_seq_length == 40


def test_prompted_export_mean_pooling_and_report(tiny_dir, tmp_path):
    source = tiny_dir("qwen2")
    report = tmp_path / "report.json"
    report.write_text(
        json.dumps(
            make_report(
                source,
                pooling="mean",
                prompt={"name": "sum", "template": 'This sentence : "{text}" can be summarized as'},
            )
        )
    )
    out = tmp_path / "out"
    result = export_model(str(source), None, out, ExportConfig(report=report, progress=False))
    assert result.pooling == "mean"
    torch.testing.assert_close(  # rtol 1e-4, atol 1e-5: float32 cut model vs the full model's layer k, prompted
        encode(out), prompted_reference(source, 2, "sum", "mean", result.max_seq_length), rtol=1e-4, atol=1e-5
    )
    assert json.loads((out / "layerpick.json").read_text())["prompt"]["name"] == "sum"
    with pytest.raises(ExportError, match="--prompt eol contradicts the report"):
        export_model(str(source), None, tmp_path / "o2", ExportConfig(report=report, prompt="eol", progress=False))


@pytest.mark.parametrize(
    ("prompt", "length", "message"),
    [
        ("eol", 20, "leaving no room for text"),
        ("no placeholder", None, "unknown prompt"),
        ("{text} {text}", None, "exactly one"),
    ],
)
def test_prompted_export_bad_input_leaves_nothing(prompt, length, message, tiny_dir, tmp_path):
    from layerpick.core.prompts import PromptError

    with pytest.raises(PromptError, match=message):
        export_model(
            str(tiny_dir("llama")),
            2,
            tmp_path / "out",
            ExportConfig(prompt=prompt, max_seq_length=length, progress=False),
        )
    assert leftovers(tmp_path) == []
