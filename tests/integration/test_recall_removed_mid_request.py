"""A recall ingest under way when its workspace is removed: the removal goes through,
and the ingest says the workspace's state was closed under it, not that a database
failed."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from tests.fake_embeddings import fake_embeddings
from tests.integration.conftest import copy_examples, start_daemon


def test_an_ingest_cut_short_by_a_removal_says_so(tmp_path: Path) -> None:
    with fake_embeddings(dimension=16) as embeddings:
        settings = {
            "recall.embedder": "http",
            "recall.embedder_url": embeddings.url,
            "recall.embedder_model": "fake",
            "recall.embedder_dimension": 16,
        }
        served = copy_examples(tmp_path / "ws", ["team-coding"])
        later = copy_examples(tmp_path / "later", ["writing"])["writing"]
        with start_daemon(tmp_path, served, **settings) as daemon:
            with daemon.http(daemon.admin_token) as http:
                added = http.post("/v1/workspaces", json={"name": "gone", "path": later})
                assert added.status_code == 201, added.text
                route = "/v1/workspaces/gone/recall/ingest"
                first = http.post(route, json={"content": "the embedder loads", "source": "a"})
                assert first.status_code == 201, first.text
            embeddings.mode = "hold"
            before = len(embeddings.requests)
            answers: dict[str, Any] = {}

            def run_ingest() -> None:
                with daemon.http(daemon.admin_token) as http:
                    body = {"content": "said before the removal", "source": "b"}
                    answers["ingest"] = http.post(route, json=body)

            ingesting = threading.Thread(target=run_ingest)
            ingesting.start()
            deadline = time.monotonic() + 20
            while len(embeddings.requests) == before and time.monotonic() < deadline:
                time.sleep(0.02)  # the ingest is embedding, held by the fake server
            assert len(embeddings.requests) > before

            def run_removal() -> None:
                with daemon.http(daemon.admin_token) as http:
                    answers["remove"] = http.delete("/v1/workspaces/gone")

            removing = threading.Thread(target=run_removal)
            removing.start()
            time.sleep(0.5)
            embeddings.gate.set()
            ingesting.join(30)
            removing.join(30)
    assert answers["remove"].status_code == 200, answers["remove"].text
    answer = answers["ingest"]
    if answer.status_code == 503:
        message = answer.json()["error"]["message"]
    else:
        failed = answer.json()["failed"]
        assert len(failed) == 1, answer.text
        message = failed[0]["reason"]
    assert "the workspace's state was closed while this request ran" in message, answer.text
