"""`layerpick serve` under a crowd, on loopback, with a tiny exported model: 200 simultaneous connections all
get their 200 and their own vector (a listen backlog of 5 used to reset some), and SIGTERM with 60 requests
in flight answers every one of them while /health says 503 so a load balancer stops sending."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import numpy as np
import pytest

from layerpick.serving.config import ServeConfig
from layerpick.serving.server import EmbeddingServer
from tests.testkit.server import strict_json, wait_for_url

CROWD = 200
IN_FLIGHT = 60


@pytest.fixture(scope="module")
def export_dir(tiny_dirs, tmp_path_factory):
    from layerpick.exporting.config import ExportConfig
    from layerpick.exporting.job import export_model

    target = tmp_path_factory.mktemp("crowd") / "export"
    export_model(str(tiny_dirs("llama")), 2, target, ExportConfig(progress=False))
    return target


def request_bytes(text: str) -> tuple[bytes, bytes]:
    body = json.dumps({"input": [text]}).encode()
    head = (
        f"POST /v1/embeddings HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head, body


def read_response(sock: socket.socket) -> tuple[int, dict]:
    """Status and JSON body of an HTTP/1.0 response (the server closes the connection after it)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), strict_json(body)


def get(host: str, port: int, path: str) -> int:
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
        return read_response(sock)[0]


def test_200_simultaneous_connections_all_get_200(export_dir):
    texts = [f"text number {i} about layers" for i in range(CROWD)]
    start = threading.Barrier(CROWD)
    with EmbeddingServer(export_dir, ServeConfig(port=0, threads=1)).start() as running:
        host, port = running.address
        expected = running.model.encode(texts, batch_size=32)

        def one(i: int) -> tuple[int, dict]:
            head, body = request_bytes(texts[i])
            start.wait(timeout=60)  # every client connects at the same moment
            with socket.create_connection((host, port), timeout=60) as sock:
                sock.sendall(head + body)
                return read_response(sock)

        with ThreadPoolExecutor(CROWD) as pool:
            answers = list(pool.map(one, range(CROWD)))
        stats = running.stats()
    statuses = [status for status, _ in answers]
    assert statuses == [200] * CROWD, {s: statuses.count(s) for s in set(statuses)}
    got = np.array([payload["data"][0]["embedding"] for _, payload in answers], dtype=np.float32)
    # atol 1e-5: float32 MiniLM; batched with 31 other texts, padding changes reduction order
    np.testing.assert_allclose(got, expected, atol=1e-5)  # each client got its own text's vector
    assert stats["requests"] == CROWD


@pytest.mark.slow
def test_sigterm_answers_every_accepted_request_and_health_says_503(export_dir):
    command = [
        sys.executable,
        "-c",
        "from layerpick.cli.app import main; main()",
        "serve",
        str(export_dir),
        "--port",
        "0",
        "--threads",
        "1",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
    sockets = []
    try:
        address = urlsplit(wait_for_url(lines, timeout_s=180))
        host, port = address.hostname, address.port
        assert get(host, port, "/health") == 200
        requests = [request_bytes(f"in flight {i}") for i in range(IN_FLIGHT)]
        for head, _ in requests:  # connected and sending: each request is on its way when SIGTERM comes
            sock = socket.create_connection((host, port), timeout=60)
            sock.sendall(head)
            sockets.append(sock)
        process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while get(host, port, "/health") != 503:  # draining: the load balancer is told to stop sending
            assert time.monotonic() < deadline, "/health never answered 503 after SIGTERM"
            time.sleep(0.05)
        for sock, (_, body) in zip(sockets, requests):
            sock.sendall(body)
        answers = [read_response(sock) for sock in sockets]
        assert process.wait(timeout=60) == 0
    finally:
        for sock in sockets:
            sock.close()
        if process.poll() is None:
            process.kill()
            process.wait()
    statuses = [status for status, _ in answers]
    assert statuses == [200] * IN_FLIGHT, {s: statuses.count(s) for s in set(statuses)}
    assert all(len(payload["data"]) == 1 for _, payload in answers)
    with pytest.raises(ConnectionRefusedError):
        get(host, port, "/health")


OVERLOAD, TEXTS_PER_REQUEST = 100, 16
LONG_TEXT = "a long text about the layers of a language model and what each of them keeps " * 12


def read_full_response(sock: socket.socket) -> tuple[int, dict[str, str], dict]:
    """Status, headers and JSON body of an HTTP/1.0 response, checked to be whole: the body is exactly as long as
    its Content-Length says and parses strictly (a cut-off response fails here)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    assert int(headers["content-length"]) == len(body), f"a cut-off response: {data[:200]!r}"
    return int(lines[0].split()[1]), headers, strict_json(body)


def overload(host: str, port: int, on_sent: threading.Barrier) -> list[tuple[int, dict[str, str], dict]]:
    """OVERLOAD concurrent requests of TEXTS_PER_REQUEST long texts; `on_sent` is passed once all are sent."""
    body = json.dumps({"input": [f"{i} {LONG_TEXT}" for i in range(TEXTS_PER_REQUEST)]}).encode()
    head = (
        f"POST /v1/embeddings HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()

    def one(_: int):
        with socket.create_connection((host, port), timeout=120) as sock:
            sock.sendall(head + body)
            on_sent.wait(timeout=120)
            return read_full_response(sock)

    with ThreadPoolExecutor(OVERLOAD) as pool:
        return list(pool.map(one, range(OVERLOAD)))


def assert_clean_outcomes(answers) -> None:
    """Every response whole; each a 200 with its vectors or a 503 that says when to come back."""
    for status, headers, payload in answers:
        assert status in (200, 503), (status, payload)
        if status == 200:
            assert len(payload["data"]) == TEXTS_PER_REQUEST
        else:
            assert payload["error"]["code"] == "shutting_down" and int(headers["retry-after"]) >= 1, headers


def test_a_drain_under_overload_refuses_what_cannot_finish_with_503_and_retry_after(export_dir):
    """More queued work than the drain allows (each batch slowed down): the requests that cannot finish before
    the deadline get a clean 503 with Retry-After; none is cut off (issue 33, cause 6)."""
    server = EmbeddingServer(export_dir, ServeConfig(port=0, threads=1, batch_size=16, drain_timeout_s=2.0))
    run_batch = server._batcher._run_batch

    def slow(texts):
        time.sleep(0.1)
        return run_batch(texts)

    server._batcher._run_batch = slow
    server.start()
    host, port = server.address
    sent = threading.Barrier(OVERLOAD + 1)
    answers: list = []
    clients = threading.Thread(target=lambda: answers.extend(overload(host, port, sent)))
    clients.start()
    sent.wait(timeout=120)
    time.sleep(0.3)  # some batches run, most are queued (100 batches of 0.1 s: more than the 2 s drain)
    assert server.shutdown(timeout=60)
    clients.join(timeout=120)
    assert len(answers) == OVERLOAD
    assert_clean_outcomes(answers)
    statuses = [status for status, _, _ in answers]
    assert 503 in statuses and 200 in statuses, {s: statuses.count(s) for s in set(statuses)}


@pytest.mark.slow
def test_sigterm_under_overload_exits_cleanly_with_whole_responses(export_dir):
    """`serve --threads 1`, 100 concurrent requests of 16 long texts, SIGTERM: every response whole (200, or 503
    with Retry-After), and the process exits 0 or 143, never 134 (issue 33, cause 6)."""
    command = [sys.executable, "-c", "from layerpick.cli.app import main; main()", "serve", str(export_dir)]
    command += ["--port", "0", "--threads", "1", "--drain-timeout", "2"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
    try:
        address = urlsplit(wait_for_url(lines, timeout_s=180))
        sent = threading.Barrier(OVERLOAD + 1)
        answers: list = []
        clients = threading.Thread(target=lambda: answers.extend(overload(address.hostname, address.port, sent)))
        clients.start()
        sent.wait(timeout=120)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=120)
        clients.join(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code in (0, 143), code
    assert len(answers) == OVERLOAD
    assert_clean_outcomes(answers)
