"""Where a model comes from, and what can be wrong with it, settled before any long work.

- hub ids: offline they must be in the local cache; online one quick question to the hub (no retries),
  an unreachable hub falls back to the cache; a typo gets "did you mean" a registry alias;
- broken files are named with what is wrong with them (load_errors);
- an output location that cannot be written is refused naming the user's path (outputs).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import constants
from huggingface_hub.errors import RepositoryNotFoundError

from layerpick._util.output_errors import OutputLocationError
from layerpick._util.outputs import check_output_location
from layerpick.core import hub
from layerpick.core.load_errors import file_problem, gguf_problem
from layerpick.errors import ModelNotFoundError

ALIASES = ("smollm2-135m", "gemma3-270m", "minilm-l6")


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache; `add(repo_id)` puts a model's config.json in it."""
    cache = tmp_path / "hub-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))

    def add(repo_id: str) -> None:
        commit = "f" * 40
        repo = cache / f"models--{repo_id.replace('/', '--')}"
        (repo / "snapshots" / commit).mkdir(parents=True)
        (repo / "snapshots" / commit / "config.json").write_text("{}")
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(commit)

    return add


@pytest.fixture
def online(monkeypatch):
    """Offline mode off; `answer(error)` makes the one hub request raise `error` (None: the hub has it)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    calls = []

    def answer(error):
        def model_info(self, repo_id, **kwargs):
            calls.append((repo_id, kwargs.get("timeout")))
            if error is not None:
                raise error

        monkeypatch.setattr("huggingface_hub.HfApi.model_info", model_info)
        return calls

    return answer


def test_offline_a_hub_id_missing_from_the_cache_is_one_line_with_a_suggestion(hub_cache):
    with pytest.raises(ModelNotFoundError) as error:
        hub.resolve_hub_id("minilm/l6", aliases=ALIASES)
    assert str(error.value) == (
        "hub id 'minilm/l6' is not in the local Hugging Face cache, and HF_HUB_OFFLINE is "
        "set (did you mean 'minilm-l6'?)"
    )


def test_offline_a_cached_hub_id_loads_from_the_cache(hub_cache):
    hub_cache("org/model")
    assert hub.resolve_hub_id("org/model") == hub.HubSource("org/model", None, local_only=True)


def test_online_the_hub_is_asked_once_with_a_short_timeout(hub_cache, online):
    calls = online(None)
    assert hub.resolve_hub_id("org/model") == hub.HubSource("org/model", None, local_only=False)
    assert calls == [("org/model", hub.PROBE_TIMEOUT_S)]


def test_online_a_repository_the_hub_does_not_have_is_refused_at_once(hub_cache, online):
    class NotOnTheHub(RepositoryNotFoundError):  # what model_info raises for a 404, without an HTTP response
        def __init__(self):
            Exception.__init__(self, "404 Client Error: Repository Not Found")

    online(NotOnTheHub())
    with pytest.raises(ModelNotFoundError, match="no model 'minilm/l6' on the Hugging Face hub.*did you mean"):
        hub.resolve_hub_id("minilm/l6", aliases=ALIASES)


def test_an_unreachable_hub_falls_back_to_the_cache_or_says_why(hub_cache, online):
    online(ConnectionError("[Errno -2] Name or service not known"))
    with pytest.raises(
        ModelNotFoundError,
        match=r"cannot reach the Hugging Face hub for 'org/model' "
        r"\(\[Errno -2\] Name or service not known\)",
    ):
        hub.resolve_hub_id("org/model")
    hub_cache("org/model")
    assert hub.resolve_hub_id("org/model").local_only


@pytest.mark.parametrize("name", ["-org/model", "org/mo del", "org/"])
def test_a_name_that_is_no_hub_id_is_refused(name, hub_cache):
    with pytest.raises(ModelNotFoundError, match="is not a model alias, a local path or a hub id"):
        hub.resolve_hub_id(name)


@pytest.mark.slow
def test_the_cli_refuses_a_hub_typo_in_one_line_without_retry_noise(tmp_path):
    """No HF_HUB_OFFLINE: where the hub cannot be reached (this sandbox) or answers 404 (online), one line."""
    env = {key: value for key, value in os.environ.items() if key not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["HF_HUB_CACHE"] = str(tmp_path / "empty-cache")
    done = subprocess.run(
        [sys.executable, "-c", "from layerpick.cli.app import main; main()", "collect", "minilm/l6", "-q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("layerpick: error: ") and "did you mean 'minilm-l6'" in lines[0]
    assert "Retrying" not in done.stderr


# ---------------------------------------------------------------------------------------------- broken files


def test_safetensors_problems_are_told_apart(tiny_dirs, tmp_path):
    weights = (Path(tiny_dirs("llama")) / "model.safetensors").read_bytes()
    header = 8 + int.from_bytes(weights[:8], "little")
    cases = {
        "in-header": weights[: header // 2],
        "in-data": weights[:-10],
        "random": os.urandom(100),
        "empty": b"",
        "fine": weights,
    }
    found = {}
    for name, data in cases.items():
        (tmp_path / f"{name}.safetensors").write_bytes(data)
        found[name] = file_problem(tmp_path / f"{name}.safetensors")
    assert found["in-header"].startswith("is truncated (") and "header alone needs" in found["in-header"]
    assert found["in-data"] == "is truncated (shorter than its header says)"
    assert found["random"].startswith("is not a safetensors file")
    assert found["empty"] == "is empty" and found["fine"] is None


def test_gguf_and_json_problems(tmp_path):
    (tmp_path / "a.gguf").write_bytes(b"PK\x03\x04 a zip file")
    (tmp_path / "b.gguf").write_bytes(b"GGUF")
    (tmp_path / "c.json").write_bytes(b'{"a": 1,')
    (tmp_path / "d.json").write_bytes(b"\xff\xfe")
    assert "not a GGUF file" in gguf_problem(tmp_path / "a.gguf")
    assert "truncated" in gguf_problem(tmp_path / "b.gguf")
    assert file_problem(tmp_path / "c.json").startswith("is not valid JSON")
    assert file_problem(tmp_path / "d.json") == "is not valid UTF-8 JSON"


# ---------------------------------------------------------------------------------------------- output locations


@pytest.mark.parametrize(
    "code, words",
    [
        (errno.EROFS, "is on a read-only file system"),
        (errno.EACCES, "is not writable (permission denied)"),
        # a full disk is the one full-disk error every writer raises, naming the user's path (issue 33, cause 5)
        (errno.ENOSPC, None),
    ],
)
def test_an_output_that_cannot_be_written_names_the_users_path(code, words, tmp_path, monkeypatch):
    import tempfile

    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(OutputLocationError) as error:
        check_output_location(tmp_path / "new" / "out", "--output")
    if words is None:
        assert str(error.value) == f"no space left on device while writing {tmp_path / 'new' / 'out'}"
    else:
        assert str(error.value) == f"cannot write --output {tmp_path / 'new' / 'out'}: {tmp_path} {words}"


def test_a_writable_output_is_checked_without_leaving_anything(tmp_path):
    check_output_location(tmp_path / "a" / "b", "--output")
    check_output_location(tmp_path / "file.safetensors", "--output", is_file=True)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits")
def test_a_folder_without_write_permission_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    try:
        with pytest.raises(OutputLocationError, match="not writable"):
            check_output_location(locked / "out", "--output")
    finally:
        locked.chmod(0o755)


def test_a_disk_that_fills_while_writing_names_the_users_path(tmp_path):
    from layerpick._util.atomic import atomic_directory

    target = tmp_path / "export"
    with pytest.raises(OutputLocationError) as error:
        with atomic_directory(target) as work:
            raise OSError(errno.ENOSPC, "No space left on device", str(work / "model.safetensors"))
    assert str(error.value).startswith(f"no space left on device while writing {target} (")  # never the staging path
    assert list(tmp_path.iterdir()) == []
