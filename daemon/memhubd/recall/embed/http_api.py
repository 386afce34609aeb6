"""Embeddings from a remote service: Ollama's `/api/embed` or an OpenAI-compatible `/embeddings`.

Only the request/response shapes, batching, timeouts and checks live here. The bearer key is
read from the environment variable the settings name and is never logged, repr'd or put in
an error message.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

import httpx
import numpy as np

from .base import EmbedderError, EmbedderSettings, check_texts, is_blank, normalise_rows

# Bytes of a failing response's body quoted in the error: enough for the server's message.
ERROR_BODY_CHARS = 300


class HttpEmbedder:
    """Posts batches of texts to an embeddings endpoint and checks every vector it returns.

    The API shape follows the URL's path: `…/api/embed` is Ollama (`{"model", "input"}` →
    `{"embeddings": [[…]]}`), `…/embeddings` is OpenAI-compatible (`{"model", "input"}` →
    `{"data": [{"index", "embedding"}]}`). One connection pool per embedder; thread-safe.
    """

    def __init__(self, settings: EmbedderSettings):
        self.api = _api_shape(settings.url)
        if not settings.model:
            raise EmbedderError("http embedder needs a model name (settings.model)")
        if settings.dimension <= 0:
            raise EmbedderError(
                "http embedder needs the model's dimension (settings.dimension), "
                "e.g. 768 for nomic-embed-text or 1536 for text-embedding-3-small"
            )
        self.url = settings.url
        self.model = settings.model
        self.dimension: int = settings.dimension
        self.batch_size = settings.batch_size
        self.timeout_s = settings.timeout_s
        # The model, not the host, decides what the vectors mean: moving the server keeps them.
        self.name = f"{self.api}:{self.model}"
        headers = {"Accept": "application/json"}
        if settings.api_key_env:
            key = os.environ.get(settings.api_key_env, "")
            if not key:
                raise EmbedderError(
                    f"environment variable {settings.api_key_env} (api_key_env) is not set or empty"
                )
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(
            headers=headers, timeout=settings.timeout_s, follow_redirects=False
        )

    def __repr__(self) -> str:
        return f"HttpEmbedder(name={self.name!r}, dimension={self.dimension})"

    def close(self) -> None:
        self._client.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        check_texts(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        # Blank texts never go over the wire: OpenAI rejects empty input, and the contract
        # says they embed to zero rows anyway.
        wanted = [i for i, text in enumerate(texts) if not is_blank(text)]
        for start in range(0, len(wanted), self.batch_size):
            rows = wanted[start : start + self.batch_size]
            out[rows] = self._embed_batch([texts[i] for i in rows])
        normalise_rows(out)
        if not np.isfinite(out).all():
            # `_matrix` refuses what would make this so; a vector stored with NaN would
            # silently drop out of every search and near-duplicate check.
            raise EmbedderError(
                f"embeddings from {_display_url(self.url)} are not finite once normalised"
            )
        return out

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        where = _display_url(self.url)
        try:
            response = self._client.post(self.url, json={"model": self.model, "input": batch})
        except httpx.TimeoutException:
            raise EmbedderError(
                f"embedding request to {where} timed out after {self.timeout_s:g} s"
            ) from None
        except httpx.HTTPError as exc:
            failed = f"embedding request to {where} failed: {type(exc).__name__}"
            raise EmbedderError(f"{failed}: {exc}", public=failed) from None
        if response.status_code != 200:
            # The body is for the log and the caller whose texts these are: a server may
            # quote its input in an error, and the input is that caller's own.
            answered = f"embedding request to {where} answered HTTP {response.status_code}"
            body = response.text[:ERROR_BODY_CHARS].strip()
            raise EmbedderError(answered + (f": {body}" if body else ""), public=answered)
        try:
            payload = response.json()
        except ValueError:
            raise EmbedderError(f"embedding response from {where} is not JSON") from None
        vectors = _vectors(payload, self.api, len(batch), where)
        return _matrix(vectors, self.dimension, self.model, where)


def _api_shape(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EmbedderError(f"http embedder url must be an http(s) URL, got {_display_url(url)!r}")
    path = parts.path.rstrip("/")
    if path.endswith("/api/embed"):
        return "ollama"
    if path.endswith("/api/embeddings"):
        raise EmbedderError(
            "Ollama's legacy /api/embeddings endpoint takes one text per request; "
            "use /api/embed instead"
        )
    if path.endswith("/embeddings"):
        return "openai"
    raise EmbedderError(
        "http embedder url must end with /api/embed (Ollama) or /embeddings "
        f"(OpenAI-compatible, e.g. /v1/embeddings), got {_display_url(url)!r}"
    )


def _display_url(url: str) -> str:
    """The URL without user info or query, which may carry credentials."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _vectors(payload: object, api: str, expected: int, where: str) -> list[object]:
    """The response's vectors in input order, or EmbedderError naming what is wrong."""
    if api == "ollama":
        vectors = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(vectors, list):
            raise EmbedderError(f"Ollama response from {where} has no 'embeddings' list")
    else:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise EmbedderError(f"OpenAI-style response from {where} has no 'data' list of objects")
        # The API promises an index per item; order by it rather than trust the list order.
        if all(isinstance(item.get("index"), int) for item in data):
            data = sorted(data, key=lambda item: item["index"])
        vectors = [item.get("embedding") for item in data]
    if len(vectors) != expected:
        raise EmbedderError(f"{where} returned {len(vectors)} vectors for {expected} texts")
    return vectors


def _matrix(vectors: list[object], dimension: int, model: str, where: str) -> np.ndarray:
    for vector in vectors:
        if not isinstance(vector, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in vector
        ):
            raise EmbedderError(f"{where} returned an embedding that is not a list of numbers")
        if len(vector) != dimension:
            raise EmbedderError(
                f"{where} returned {len(vector)}-d vectors for model {model}, but the "
                f"settings say dimension {dimension}; set dimension = {len(vector)} and reindex"
            )
    # Checked as float32, the type stored: a finite JSON number such as 1e39 is infinite
    # there, and a row whose length overflows (or underflows to 0) cannot be normalised.
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            matrix = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), dimension)
        except (OverflowError, ValueError, TypeError):
            # An integer too large for any float (JSON allows 400 digits) is refused here.
            raise EmbedderError(
                f"{where} returned an embedding with values too large for float32"
            ) from None
        norms = np.linalg.norm(matrix, axis=1)
    if not np.isfinite(norms).all():
        raise EmbedderError(
            f"{where} returned an embedding with NaN or infinite values "
            "(or values too large for float32)"
        )
    if not (norms > 0).all():
        raise EmbedderError(
            f"{where} returned an all-zero embedding (or one too small to normalise) "
            "for a text that is not blank"
        )
    return matrix
