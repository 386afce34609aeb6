"""The http embedder refuses vectors that float32 cannot hold or normalise, rather than
handing on NaN or zero rows that would silently drop out of vector search."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from memhubd.recall.embed import EmbedderError, EmbedderSettings, load_embedder
from tests.fake_embeddings import FakeEmbeddings, fake_embeddings


@pytest.fixture(scope="module")
def server() -> Iterator[FakeEmbeddings]:
    with fake_embeddings(dimension=16) as running:
        yield running


def embed(server: FakeEmbeddings, mode: str) -> np.ndarray:
    server.mode = mode
    settings = EmbedderSettings(kind="http", url=server.url, model="fake", dimension=16)
    return load_embedder(settings).embed(["alpha", "beta"])


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("big", "NaN or infinite values"),  # 1e39 is finite in JSON, infinite as float32
        ("huge", "NaN or infinite values"),  # each value fits, the row's length does not
        ("nan", "NaN or infinite values"),
        ("zero", "all-zero embedding"),
        ("tiny", "all-zero embedding"),  # the length underflows to 0 in float32
    ],
)
def test_vectors_float32_cannot_normalise_are_refused(
    server: FakeEmbeddings, mode: str, message: str
) -> None:
    with pytest.raises(EmbedderError, match=message):
        embed(server, mode)


def test_ordinary_vectors_come_back_finite_and_of_unit_length(server: FakeEmbeddings) -> None:
    vectors = embed(server, "ok")
    assert vectors.dtype == np.float32 and np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
