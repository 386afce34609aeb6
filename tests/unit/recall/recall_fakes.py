"""Helpers of the recall unit tests: a small deterministic embedder with the
`Embedder` interface (hashed bag of words), ingest options, fixture texts."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memhubd.recall.ingest import IngestOptions

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "recall"


class HashingEmbedder:
    """Texts sharing words get similar unit vectors; enough to test plumbing."""

    def __init__(self, name: str = "hashing-test", dimension: int = 64) -> None:
        self.name = name
        self.dimension = dimension
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def options(**changes: object) -> IngestOptions:
    values: dict[str, object] = {"workspace": "ws", "identity": "tester", "door": "test"}
    values.update(changes)
    return IngestOptions(**values)  # type: ignore[arg-type]


def fixture_text(relative: str) -> str:
    return (FIXTURES / relative).read_text(encoding="utf-8")
