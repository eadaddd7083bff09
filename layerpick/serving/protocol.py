"""The OpenAI-compatible embeddings protocol: what a `/v1/embeddings` request may hold, and the answer's shape.

Owns: parsing and validating a request body (`input` a string or a list of strings, `model`,
`encoding_format` float or base64, `dimensions`), the request limits' 413 answers, `ApiError` (an HTTP error
answered as OpenAI does: {"error": {"message", "type", "code"}}), the `--strict-model` check
(`check_model`), and rendering embeddings into the response, whose `model` is always the served model's name.

Every input must be text the model can take: JSON may carry a lone surrogate (`"\\ud800"` without its pair),
which the tokenizer refuses; such a request is a 400 naming the input, answered when it is parsed, so it never
reaches a batch shared with other clients' requests. (The tokenizer takes every other string, NUL and
noncharacters included.)

`dimensions=n` keeps the first n dimensions; when the model itself L2-normalises its output (a Normalize
module), the kept part is normalised again so vectors stay unit length; otherwise it is returned as is
(the same as sentence-transformers' `truncate_dim`). Only models trained for it (Matryoshka) keep their
quality when truncated.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from layerpick.serving.config import ServeConfig

ENCODING_FORMATS = ("float", "base64")
MODEL_NAME_SHOWN = 100  # characters of a refused model name quoted back


class ApiError(Exception):
    """An HTTP error answered as OpenAI does: {"error": {"message", "type", "code"}}."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        code: str | None = None,
        retry_after_s: int | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.kind, self.code = status, message, kind, code
        self.retry_after_s = retry_after_s  # sent as the Retry-After header (a 503 of a draining server)

    def payload(self) -> dict:
        return {"error": {"message": self.message, "type": self.kind, "code": self.code}}


@dataclass(frozen=True)
class EmbeddingRequest:
    texts: list[str]
    model: str | None
    encoding_format: str
    dimensions: int | None


def parse_request(body: bytes, config: ServeConfig, dimension: int) -> EmbeddingRequest:
    """Validate a /v1/embeddings body; raises ApiError (400, or 413 for the size limits)."""
    data = _parse_json_object(body)
    texts = _parse_input(data.get("input"), config)
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise ApiError(400, "'model' must be a string", code="invalid_model")
    fmt = data.get("encoding_format") or "float"
    if fmt not in ENCODING_FORMATS:
        raise ApiError(400, f"'encoding_format' must be one of {', '.join(ENCODING_FORMATS)} (got {fmt!r})")
    return EmbeddingRequest(texts, model, fmt, _parse_dimensions(data.get("dimensions"), dimension))


def _parse_json_object(body: bytes) -> dict:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ApiError(400, f"request body is not valid JSON: {error}", code="invalid_json") from None
    if not isinstance(data, dict):
        raise ApiError(400, "request body must be a JSON object")
    return data


def _parse_input(value: Any, config: ServeConfig) -> list[str]:
    if value is None:
        raise ApiError(400, "'input' is required: a string or a list of strings", code="missing_input")
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        hint = "; token arrays are not supported" if isinstance(texts, list) and texts and _is_ints(texts) else ""
        raise ApiError(400, f"'input' must be a string or a list of strings{hint}", code="invalid_input")
    if not texts:
        raise ApiError(400, "'input' must not be an empty list", code="invalid_input")
    _check_texts(texts, config)
    return texts


def _check_texts(texts: list[str], config: ServeConfig) -> None:
    if len(texts) > config.max_inputs:
        raise ApiError(
            413,
            f"too many inputs: {len(texts)} in one request, the limit is {config.max_inputs}",
            code="too_many_inputs",
        )
    for index, text in enumerate(texts):
        if not text:
            raise ApiError(400, f"input[{index}] is an empty string", code="invalid_input")
        if len(text) > config.max_chars:
            raise ApiError(
                413,
                f"input[{index}] has {len(text)} characters, the limit is {config.max_chars}",
                code="input_too_long",
            )
        _check_encodable(index, text)


def _check_encodable(index: int, text: str) -> None:
    """Text that cannot be written as UTF-8 holds a lone surrogate (the only str that UTF-8 cannot encode)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ApiError(
            400,
            f"input[{index}] is not valid text: it contains a lone surrogate "
            f"(\\u{ord(text[error.start]):04x}) at character {error.start}; surrogate escapes must "
            "come in high-low pairs",
            code="invalid_input",
        ) from None


def _is_ints(values: list) -> bool:
    return all(isinstance(v, int) or (isinstance(v, list) and all(isinstance(x, int) for x in v)) for v in values)


def _parse_dimensions(value: Any, dimension: int) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= dimension:
        raise ApiError(
            400, f"'dimensions' must be an integer from 1 to {dimension} (got {value!r})", code="invalid_dimensions"
        )
    return value


def check_model(requested: str | None, served: str) -> None:
    """`--strict-model`: a request naming another model is refused as OpenAI does (404, model_not_found);
    one that names no model is served."""
    if requested is not None and requested != served:
        shown = requested if len(requested) <= MODEL_NAME_SHOWN else requested[:MODEL_NAME_SHOWN] + "..."
        raise ApiError(
            404, f"model {shown!r} is not served here: this server serves {served!r}", code="model_not_found"
        )


def render_vector(vector: np.ndarray, request: EmbeddingRequest, normalized: bool) -> list[float] | str:
    """One embedding as the request asks: cut to `dimensions` (re-normalised if the model normalises),
    then floats or base64 of little-endian float32 bytes."""
    if request.dimensions is not None:
        vector = vector[: request.dimensions]
        if normalized:
            norm = float(np.linalg.norm(vector))
            vector = vector / norm if norm > 0 else vector
    vector = np.asarray(vector, dtype="<f4")
    if request.encoding_format == "base64":
        return base64.b64encode(vector.tobytes()).decode("ascii")
    return vector.tolist()


def embeddings_payload(
    request: EmbeddingRequest, vectors: np.ndarray, tokens: Sequence[int], model_name: str, normalized: bool
) -> dict:
    """The response body: one embedding object per input, in order, the served model's name (whatever `model`
    the request named, as OpenAI answers), and the tokens the inputs used."""
    data = [
        {"object": "embedding", "index": i, "embedding": render_vector(v, request, normalized)}
        for i, v in enumerate(vectors)
    ]
    used = int(sum(tokens))
    return {"object": "list", "data": data, "model": model_name, "usage": {"prompt_tokens": used, "total_tokens": used}}
