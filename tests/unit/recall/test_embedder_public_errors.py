"""What an embedder's failure tells whom: the full message (which may quote the texts
sent, through an upstream's error body) goes to the log and the caller whose texts they
are; the shelf's shared record shows only the public form. A backend's unexpected
exception is recorded like any failure and logged with its traceback once per message."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memhubd.recall import shelf as shelf_module
from memhubd.recall.embed import EmbedderError, EmbedderSettings, load_embedder
from memhubd.recall.shelf import RecallSettings, RecallShelf
from tests.fake_embeddings import FakeEmbeddings, fake_embeddings

SECRET = "SECRET private diary: password hunter2"


@pytest.fixture
def server() -> Iterator[FakeEmbeddings]:
    with fake_embeddings(dimension=16) as running:
        yield running


def settings_for(server: FakeEmbeddings, tmp_path: Path, **changes: object) -> EmbedderSettings:
    # A model name per test: embedders are cached per settings across the process.
    return EmbedderSettings(
        kind="http",
        url=server.url,
        model=f"fake-{tmp_path.name}",
        dimension=16,
        **changes,  # type: ignore[arg-type]
    )


def test_an_error_body_quoting_the_input_stays_out_of_the_public_message(
    server: FakeEmbeddings, tmp_path: Path
) -> None:
    embedder = load_embedder(settings_for(server, tmp_path))
    server.mode = "echo"
    with pytest.raises(EmbedderError) as raised:
        embedder.embed([SECRET])
    assert SECRET in str(raised.value)  # for the log, and the caller who sent it
    assert raised.value.public.endswith("answered HTTP 400")
    assert "hunter2" not in raised.value.public


def test_a_timeout_says_how_long_it_waited(server: FakeEmbeddings, tmp_path: Path) -> None:
    embedder = load_embedder(settings_for(server, tmp_path, timeout_s=0.2))
    server.mode = "hold"
    try:
        with pytest.raises(EmbedderError, match=r"timed out after 0\.2 s$"):
            embedder.embed(["alpha"])
    finally:
        server.gate.set()


def test_an_integer_no_float_holds_is_refused_as_an_embedder_error(
    server: FakeEmbeddings, tmp_path: Path
) -> None:
    embedder = load_embedder(settings_for(server, tmp_path))
    server.mode = "bigint"
    with pytest.raises(EmbedderError, match="too large for float32"):
        embedder.embed(["alpha"])


def test_the_shelf_shows_the_public_form_of_a_failure_and_logs_the_full_one(
    server: FakeEmbeddings, tmp_path: Path, shelf_logs: list[dict[str, Any]]
) -> None:
    shelf = RecallShelf(tmp_path, RecallSettings(embedder=settings_for(server, tmp_path)))
    embedder = shelf.embedder()
    assert embedder is not None
    server.mode = "echo"
    with pytest.raises(EmbedderError, match="hunter2"):
        embedder.embed([SECRET])
    failure = shelf.embedder_failure
    assert failure is not None and SECRET in failure.message
    assert shelf.embedder_error == failure.public
    assert "hunter2" not in failure.public and "answered HTTP 400" in failure.public
    assert [SECRET in e["error"] for e in shelf_logs] == [True]
    shelf.close()


class Raising:
    """A backend with a bug: every call raises something that is no EmbedderError."""

    name = "broken"
    dimension = 4

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError(f"cannot handle {texts[0]!r}")


def test_an_unexpected_backend_exception_is_logged_with_its_traceback_once(
    tmp_path: Path, shelf_logs: list[dict[str, Any]]
) -> None:
    shelf = RecallShelf(tmp_path, RecallSettings(embedder=None))
    reporting = shelf_module._Reporting(Raising(), shelf)
    for _ in range(5):
        with pytest.raises(EmbedderError, match="RuntimeError") as raised:
            reporting.embed([SECRET])
    assert "hunter2" in str(raised.value) and "hunter2" not in raised.value.public
    # one record, at error, carrying the exception (and so its traceback)
    (record,) = shelf_logs
    assert record["log_level"] == "error"
    assert isinstance(record["exc_info"], RuntimeError)
    failure = shelf.embedder_failure
    assert failure is not None and "hunter2" in failure.message
    assert shelf.embedder_error == "the embedder failed: RuntimeError"
    shelf.close()
