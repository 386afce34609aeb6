"""A daemon SIGKILLed in the middle of a large recall ingest restarts with a consistent
store: every source is stored whole or not at all, the full-text index and the
vectors agree with the drawers, and re-running the ingest completes it exactly once.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.faults.test_daemon_kill import WS, Daemon

FILES = 60  # the kill lands after 3 sources: 57 more are margin enough
EXCHANGES = 40
INGEST = f"/v1/workspaces/{WS}/recall/ingest"


def transcript(index: int) -> str:
    lines = []
    for turn in range(EXCHANGES):
        question = f"session {index} question {turn}: how should worker {turn} retry job {index}?"
        answer = f"session {index} answer {turn}: back off {turn} seconds, then give up on {index}."
        lines.append(json.dumps({"type": "user", "message": {"role": "user", "content": question}}))
        lines.append(
            json.dumps({"type": "assistant", "message": {"role": "assistant", "content": answer}})
        )
    return "\n".join(lines) + "\n"


def batches() -> list[list[dict[str, str]]]:
    files = [{"name": f"sessions/s{i:03d}.jsonl", "content": transcript(i)} for i in range(FILES)]
    return [files[i : i + 10] for i in range(0, FILES, 10)]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "base.mem").write_text("entity db {\n  aliases: [database]\n}\n")
    socket_dir = tempfile.mkdtemp(prefix="mh-")
    live = Daemon(root, tmp_path / "state", os.path.join(socket_dir, "d.sock"), tmp_path / "log")
    try:
        yield live
    finally:
        live.stop()
        shutil.rmtree(socket_dir, ignore_errors=True)


def ingest(daemon: Daemon, errors: list[BaseException]) -> None:
    try:
        with daemon.client(None, timeout=120) as client:  # the socket: the local operator
            for batch in batches():
                client.post(INGEST, json={"files": batch})
    except httpx.TransportError:
        pass  # killed mid-request: expected
    except BaseException as error:  # reported by the test
        errors.append(error)


def check_consistent(database: Path) -> int:
    """Assert the store's invariants; returns the number of live drawers."""
    with sqlite3.connect(database) as connection:
        per_source = connection.execute(
            "SELECT source_file, count(*) FROM drawers WHERE deleted_at IS NULL GROUP BY 1"
        ).fetchall()
        assert all(count == EXCHANGES for _source, count in per_source), per_source
        live = connection.execute(
            "SELECT count(*) FROM drawers WHERE deleted_at IS NULL"
        ).fetchone()[0]
        vectors = connection.execute(
            "SELECT count(*) FROM vectors v JOIN drawers d ON d.rowid = v.rowid"
        ).fetchone()[0]
        orphans = connection.execute(
            "SELECT count(*) FROM vectors WHERE rowid NOT IN (SELECT rowid FROM drawers)"
        ).fetchone()[0]
        assert orphans == 0
        assert vectors in (0, live)  # all or none: none when no embedder could load
        # Raises if the FTS index disagrees with the drawers table (none are deleted here).
        connection.execute("INSERT INTO drawers_fts(drawers_fts) VALUES ('integrity-check')")
        indexed = connection.execute(
            "SELECT count(*) FROM drawers_fts WHERE drawers_fts MATCH '\"session\"'"
        ).fetchone()[0]
        assert indexed == live
        audited = connection.execute(
            "SELECT coalesce(sum(json_extract(detail, '$.chunks')), 0) FROM audit "
            "WHERE action = 'ingest'"
        ).fetchone()[0]
        assert audited == live  # an audit entry commits with its drawers, never apart
    return live


def test_sigkill_during_ingest_leaves_a_consistent_store(daemon: Daemon, tmp_path: Path) -> None:
    database = tmp_path / "state" / "recall" / f"{WS}.db"
    daemon.start()
    errors: list[BaseException] = []
    worker = threading.Thread(target=ingest, args=(daemon, errors))
    worker.start()
    deadline = time.monotonic() + 60
    # Kill once some sources are in, long before all of them are.
    while time.monotonic() < deadline:
        if database.exists():
            try:
                with sqlite3.connect(database) as connection:
                    done = connection.execute("SELECT count(DISTINCT source_file) FROM drawers")
                    if done.fetchone()[0] >= 3:
                        break
            except sqlite3.OperationalError:
                pass  # the schema is still being created
        time.sleep(0.01)
    daemon.kill()
    worker.join(60)
    assert not errors, errors
    partial = check_consistent(database)
    assert 0 < partial < FILES * EXCHANGES

    daemon.start()
    with daemon.client(None, timeout=120) as client:
        for batch in batches():
            answer = client.post(INGEST, json={"files": batch})
            assert answer.status_code in (200, 201), answer.text
        hits = client.post(
            f"/v1/workspaces/{WS}/recall/search", json={"query": "worker 7 retry job 42"}
        ).json()["hits"]
    daemon.stop()
    assert check_consistent(database) == FILES * EXCHANGES
    assert hits and hits[0]["source_file"] == "sessions/s042.jsonl"
