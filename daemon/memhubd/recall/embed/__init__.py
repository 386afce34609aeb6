"""Text to vectors: one `Embedder` interface, three backends, one factory.

The default is a static model distilled from all-MiniLM-L6-v2 and vendored in `model/`
(numpy + tokenizers + safetensors, no download, ever); `onnx` runs MiniLM itself and `http`
asks Ollama or an OpenAI-compatible service. This package knows nothing about stores,
drawers, the daemon or its doors.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from .base import Embedder, EmbedderError, EmbedderSettings
from .static_model import VENDORED_DIR, VENDORED_NAME, StaticEmbedder

__all__ = ["Embedder", "EmbedderError", "EmbedderSettings", "load_embedder"]

# Settings are few per process (one per configured embedder); the bound only guards against
# a caller building settings per request.
CACHE_SIZE = 8
_build_lock = threading.Lock()


def load_embedder(settings: EmbedderSettings | None = None) -> Embedder:
    """The embedder for `settings` (default: the vendored static model), built once per settings.

    Building is cheap: models load on first use. Raises EmbedderError, with a message that
    says what to change, for invalid settings or a backend that cannot be built.
    """
    settings = settings or EmbedderSettings()
    settings.validate()
    # One lock around the cache so that concurrent first calls share one instance (and so
    # one copy of the model in memory); errors are not cached and are retried next call.
    with _build_lock:
        return _cached(settings)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _cached(settings: EmbedderSettings) -> Embedder:
    if settings.kind == "static":
        if not settings.model:
            return StaticEmbedder(VENDORED_DIR, VENDORED_NAME, settings.dimension, verify=True)
        folder = Path(settings.model).expanduser()
        # A local model2vec-format folder; its name records which one wrote the vectors.
        return StaticEmbedder(folder, f"static:{folder.name}", settings.dimension)
    if settings.kind == "onnx":
        from .onnx_minilm import OnnxEmbedder

        return OnnxEmbedder(settings)
    from .http_api import HttpEmbedder

    return HttpEmbedder(settings)
