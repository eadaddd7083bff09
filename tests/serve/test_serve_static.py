"""Serving a static export (issue 33, cause 7): model2vec's unbounded `max_seq_length` is infinite, and `/health` and
every other response must still be JSON that a strict parser takes (`call` parses strictly)."""

import math

from layerpick.serving.config import ServeConfig
from layerpick.serving.server import EmbeddingServer
from tests.testkit.server import call, embed


def test_a_static_export_answers_health_and_embeddings_in_strict_json(statics):
    with EmbeddingServer(statics[0], ServeConfig(port=0)).start() as running:
        assert math.isinf(running.model.max_seq_length)  # the value that became `Infinity` on the wire
        status, health = call(running.url, "GET", "/health")
        assert status == 200 and health["max_seq_length"] is None
        status, payload = embed(running.url, {"input": ["a static vector", "another"]})
    assert status == 200 and len(payload["data"]) == 2 and len(payload["data"][0]["embedding"]) == 8
