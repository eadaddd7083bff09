"""Bad input on the command line: one clear line, exit code 1, no traceback. Run in this process through the
entry point's `run` (`tests.testkit.cli.invoke`); the first test runs the installed script, so the same holds for
a child process."""

import subprocess

import pytest

from tests.testkit.cli import LAYERPICK, assert_one_line_error, invoke

pytestmark = pytest.mark.slow


def run(*args, env=None):
    return invoke(*args, env=env)


def test_missing_model_path():
    done = subprocess.run([LAYERPICK, "collect", "./no/such/model", "-q"], capture_output=True, text=True, timeout=300)
    assert_one_line_error(done, "model path not found")
    assert_one_line_error(run("collect", "./no/such/model", "-q"), "model path not found")


def test_unknown_alias():
    assert_one_line_error(run("collect", "smollm9", "-q"), "unknown model alias 'smollm9'")


def test_unsupported_architecture(tmp_path):
    from transformers import T5Config, T5Model

    T5Model(T5Config(d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8, vocab_size=64)).save_pretrained(tmp_path)
    from tests.testkit.tiny import make_tokenizer

    make_tokenizer("llama").save_pretrained(tmp_path)
    assert_one_line_error(run("collect", str(tmp_path), "-q"), "unsupported architecture 't5'")


def test_pickle_weights_refused_unless_allowed(tmp_path):
    import torch

    from tests.testkit.tiny import make_model, make_tokenizer

    model = make_model("llama")
    model.config.save_pretrained(tmp_path)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")  # transformers 5 only writes safetensors
    make_tokenizer("llama").save_pretrained(tmp_path)
    assert_one_line_error(run("collect", str(tmp_path), "-q"), "--allow-pickle")
    calib = tmp_path / "c.txt"
    calib.write_text("a first text\nanother text\n")
    assert run("collect", str(tmp_path), "--allow-pickle", "--calibration", str(calib), "-q").returncode == 0


@pytest.mark.parametrize(
    "content, message",
    [(None, "calibration file not found"), (b"\n\n", "contains no texts"), (b"\xff\xfe\xfa", "not valid UTF-8")],
)
def test_bad_calibration(tiny_dirs, tmp_path, content, message):
    path = tmp_path / "calib.txt"
    if content is not None:
        path.write_bytes(content)
    assert_one_line_error(run("collect", str(tiny_dirs("llama")), "--calibration", str(path), "-q"), message)


def test_text_with_zero_tokens(tmp_path):
    """A decoder tokenizer whose normaliser removes format characters (as BERT's does) leaves no token."""
    from tokenizers import normalizers

    from tests.testkit.tiny import make_model, make_tokenizer

    tokenizer = make_tokenizer("llama")
    tokenizer.backend_tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, lowercase=False)
    make_model("llama").save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    path = tmp_path / "calib.txt"
    path.write_text("a real text\n\u200b\n")  # zero-width space: cleaned away, no token left
    result = run("collect", str(tmp_path / "m"), "--calibration", str(path), "-q")
    assert_one_line_error(result, "text #1 ('\\u200b') has zero tokens")


def test_usage_error_is_exit_2():
    result = run("collect", "--no-such-option")
    assert result.returncode == 2 and "No such option" in result.stderr


def test_debug_variable_shows_traceback():
    result = run("collect", "smollm9", "-q", env={"LAYERPICK_DEBUG": "1"})
    assert result.returncode != 0 and "Traceback" in result.stderr


def test_version():
    result = run("--version")
    assert result.returncode == 0 and result.stdout.startswith("layerpick ")
