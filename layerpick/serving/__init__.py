"""The serve stage: an exported embedder over HTTP (OpenAI-style `/v1/embeddings`).

`server` composes the pieces: `config`, the request `protocol`, the `http_layer`, and the `batcher` that groups
concurrent requests into model batches.

Names are imported on first use (`_util.lazy`), so a light submodule imports without the heavy ones.
"""

from layerpick._util.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(__name__, config="ServeConfig ServeError", server="EmbeddingServer serve")
