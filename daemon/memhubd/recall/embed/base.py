"""The embedder contract shared by every backend: the protocol, its settings and its error.

Text in, float32 vectors out; nothing here knows about stores, drawers, HTTP routes or the
daemon. Backends import this module, never each other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

import numpy as np

KINDS = ("static", "onnx", "http")
T = TypeVar("T")


class EmbedderError(Exception):
    """An embedder cannot be built or cannot embed; the message says what to change.

    `public` says the same with nothing of the request in it: no text sent and no part
    of an upstream answer's body, which may quote them. It is what may be shown to
    callers other than the one whose request failed; by default the message itself.
    """

    def __init__(self, message: str, public: str | None = None) -> None:
        super().__init__(message)
        self.public = message if public is None else public


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows of a fixed dimension.

    `name` is a stable id that a store records next to the vectors it wrote, so a change of
    model (not just of dimension) is detected. Blank texts (no non-whitespace character)
    embed to a zero row on every backend.
    """

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class EmbedderSettings:
    """Which embedder to build.

    kind: "static" (the vendored model, or a local model2vec-format folder named by `model`),
    "onnx" (all-MiniLM-L6-v2 int8 via onnxruntime; the `onnx` extra) or "http" (Ollama
    `/api/embed` or an OpenAI-compatible `/embeddings` endpoint at `url`).
    dimension: 0 means "the model's own"; a non-zero value must match it. Required for http.
    api_key_env: name of the environment variable holding the http bearer key (the key itself
    never appears in settings, so settings can be logged).
    """

    kind: str = "static"
    url: str = ""
    model: str = ""
    dimension: int = 0
    api_key_env: str = ""
    batch_size: int = 64
    timeout_s: float = 30.0

    def validate(self) -> None:
        """Raise EmbedderError for settings no backend accepts."""
        if self.kind not in KINDS:
            raise EmbedderError(
                f"unknown embedder kind {self.kind!r}; expected one of {', '.join(KINDS)}"
            )
        if self.batch_size < 1:
            raise EmbedderError(f"embedder batch_size must be at least 1, got {self.batch_size}")
        if not self.timeout_s > 0:
            raise EmbedderError(f"embedder timeout_s must be positive, got {self.timeout_s}")
        if self.dimension < 0:
            raise EmbedderError(f"embedder dimension must not be negative, got {self.dimension}")
        if self.kind != "http" and (self.url or self.api_key_env):
            raise EmbedderError(
                f"embedder kind {self.kind!r} takes no url or api_key_env; those are for kind 'http'"
            )


def is_blank(text: str) -> bool:
    """True for text that embeds to a zero row: nothing but whitespace."""
    return not text or text.isspace()


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale each row of a float32 matrix to unit length in place; zero rows stay zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


def check_texts(texts: Sequence[str]) -> None:
    """Reject a bare string (it would embed character by character) and non-str items."""
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single str")
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"embed() takes str texts, got {type(text).__name__}")


class LoadOnce(Generic[T]):
    """A value built on first use, once, even when several threads ask for it at the same time.

    A failed build is not remembered: the next call tries again (and raises again).
    """

    def __init__(self, build: Callable[[], T]):
        self._build = build
        self._lock = threading.Lock()
        self._value: T | None = None

    def get(self) -> T:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._build()
                value = self._value
        return value
