"""Waiting for a `layerpick serve` child process to announce where it listens."""

from __future__ import annotations

import queue
import re
import time


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
