"""The serve stage: an exported embedder over HTTP (OpenAI-style `/v1/embeddings`).

`server` composes the pieces: `config`, the request `protocol`, the `http_layer`, and the `batcher` that groups
concurrent requests into model batches.
"""

from layerpick.serving.config import ServeConfig, ServeError
from layerpick.serving.server import EmbeddingServer, serve

__all__ = ["EmbeddingServer", "ServeConfig", "ServeError", "serve"]
