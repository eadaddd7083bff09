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
