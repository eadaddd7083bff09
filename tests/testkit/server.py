"""Talking to a `layerpick serve` server in tests: waiting for a child process to announce where it listens,
and one JSON request with the standard library's http.client."""

from __future__ import annotations

import http.client
import json
import queue
import re
import time
from urllib.parse import urlsplit


def wait_for_url(lines: queue.Queue, timeout_s: float = 120) -> str:
    """The `http://127.0.0.1:PORT` the server prints on stderr (lines fed into `lines` by a reader thread)."""
    seen, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        seen.append(line)
        found = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
        if found:
            return found.group(1)
    raise AssertionError(f"the server did not announce its address: {''.join(seen)[-2000:]}")


def strict_json(data: bytes | str):
    """JSON as a strict client parses it: Python's NaN, Infinity and -Infinity are not JSON and fail the test."""

    def refuse(constant: str):
        raise AssertionError(f"the server sent {constant}, which is not JSON")

    return json.loads(data, parse_constant=refuse)


def call(url: str, method: str, path: str, body=None, headers: dict | None = None) -> tuple[int, dict]:
    """One request (a dict body is sent as JSON, bytes as they are); returns (status, the body parsed strictly)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    try:
        connection.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, strict_json(response.read())
    finally:
        connection.close()


def embed(url: str, body) -> tuple[int, dict]:
    """POST /v1/embeddings."""
    return call(url, "POST", "/v1/embeddings", body)
