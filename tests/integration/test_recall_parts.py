"""Recall through a real daemon: a file larger than a request body uploaded in parts,
and reindex in steps with memctl's progress display."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM = "team-coding"
BODY_LIMIT = 16 * 1024


def transcript(exchanges: int) -> str:
    lines = []
    for n in range(exchanges):
        question = f"exchange {n}: why does batch {n} of the ledger import drift " + "x" * 150
        answer = f"answer {n}: the rounding of batch {n} happens before conversion " + "y" * 150
        lines.append(json.dumps({"type": "user", "message": {"role": "user", "content": question}}))
        lines.append(
            json.dumps({"type": "assistant", "message": {"role": "assistant", "content": answer}})
        )
    return "\n".join(lines) + "\n"


def short_transcript(exchanges: int) -> str:
    lines = []
    for n in range(exchanges):
        for role, text in (("user", f"question {n} on shard {n}"), ("assistant", f"answer {n}")):
            message = {"role": role, "content": text}
            lines.append(json.dumps({"type": role, "message": message}))
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("recall-parts")
    workspaces = copy_examples(root / "ws", [TEAM])
    with start_daemon(root, workspaces, **{"limits.max_body_bytes": BODY_LIMIT}) as live:
        yield live


def memctl(daemon: LiveDaemon, *argv: str, **kwargs: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", daemon.admin_token, *argv],
        text=True,
        timeout=120,
        env=dict(os.environ),
        **kwargs,  # type: ignore[call-overload]
    )


def test_a_file_larger_than_a_request_is_uploaded_in_parts(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    text = transcript(120)
    assert len(text) > 3 * BODY_LIMIT
    big = tmp_path / "bigroom" / "session.jsonl"
    big.parent.mkdir()
    big.write_text(text)
    done = memctl(
        daemon, "recall", "ingest", str(big), "-w", TEAM, "--room", "bigroom",
        "--request-bytes", str(BODY_LIMIT // 2),
        "--json", capture_output=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["files"] == 1 and summary["chunks"] == 120 and not summary["failed"]
    with daemon.http(daemon.admin_token) as http:
        status = http.get(f"/v1/workspaces/{TEAM}/recall/status").json()
        answer = http.post(
            f"/v1/workspaces/{TEAM}/recall/search",
            json={"query": "exchange 77 batch 77", "limit": 3, "room": "bigroom"},
        ).json()
    # One source, chunked as a whole: exchanges are numbered across the parts' seams.
    assert {r["room"]: r["drawer_count"] for r in status["rooms"]}["bigroom"] == 120
    top = answer["hits"][0]
    assert top["content"].count("exchange 77:") == 1 and top["chunk_index"] == 77


def test_without_parts_the_daemon_refuses_the_file(daemon: LiveDaemon, tmp_path: Path) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={"files": [{"name": "whole.jsonl", "content": transcript(120)}]},
        )
    assert answer.status_code == 413


def test_parts_out_of_order_fail_and_store_nothing(daemon: LiveDaemon) -> None:
    part = {"name": "odd.txt", "content": "second half\n", "upload": "u-out-of-order"}
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={"files": [{**part, "part": 1, "parts": 2}]},
        )
        assert answer.status_code in (200, 201), answer.text
        body = answer.json()
        assert (
            body["failed"][0]["source"] == "odd.txt" and "in order" in body["failed"][0]["reason"]
        )
        first = {**part, "content": "first half\n", "part": 0, "parts": 2}
        body = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json={"files": [first]}).json()
        assert body["files"] == 0 and body["chunks"] == 0
        assert body["sources"][0]["status"] == "part_received"
        body = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={"files": [{**part, "part": 1, "parts": 2}]},
        ).json()
        assert body["files"] == 1 and body["chunks"] == 1
        drawer = body["sources"][0]["drawer_ids"][0]
        answer = http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{drawer}").json()
    assert "first half\nsecond half" in json.dumps(answer).replace("\\n", "\n"), answer


def test_reindex_in_steps_covers_every_drawer(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token, timeout=60) as http:
        total = http.get(f"/v1/workspaces/{TEAM}/recall/status").json()["drawer_count"]
        after, seen, steps = 0, 0, 0
        while True:
            answer = http.post(
                f"/v1/workspaces/{TEAM}/recall/reindex", json={"after": after, "limit": 7}
            ).json()
            steps += 1
            seen += answer["drawers"]
            after = answer["next"]
            assert answer["total"] == total
            if answer["done"]:
                break
            assert "vectors" not in answer  # nothing swapped in before the last step
        assert seen == total and steps >= total // 7
        assert answer["vectors"] == total
        bad = http.post(f"/v1/workspaces/{TEAM}/recall/reindex", json={"limit": 0})
        assert bad.status_code == 422 and "limit" in bad.text


def test_interleaved_reindex_runs_leave_no_drawer_without_a_vector(daemon: LiveDaemon) -> None:
    # Two runs in steps (two admins, or a cron job beside a person): the second one's
    # first step empties the staging table under the first one, whose last step must
    # still swap in a vector for every live drawer.
    url = f"/v1/workspaces/{TEAM}/recall/reindex"
    with daemon.http(daemon.admin_token, timeout=60) as http:
        ingested = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={
                "files": [{"name": "interleaved/session.jsonl", "content": short_transcript(30)}]
            },
        )
        assert ingested.status_code in (200, 201), ingested.text
        total = http.get(f"/v1/workspaces/{TEAM}/recall/status").json()["drawer_count"]
        assert total >= 30
        first = http.post(url, json={"after": 0, "limit": 20}).json()
        assert not first["done"]
        other = http.post(url, json={"after": 0, "limit": 5}).json()  # starts over
        assert not other["done"]
        last = http.post(url, json={"after": first["next"], "limit": total}).json()
        status = http.get(f"/v1/workspaces/{TEAM}/recall/status").json()
    assert last["done"] and last["vectors"] == total
    assert last["filled"] == 15  # rows 6-20: staged by the first run, dropped by the other
    assert status["vector_count"] == status["drawer_count"] == total, status


def test_memctl_reindex_shows_progress_on_a_terminal(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token, timeout=60) as http:
        ingested = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={"files": [{"name": "progress/session.jsonl", "content": short_transcript(5)}]},
        )
        assert ingested.status_code in (200, 201), ingested.text
    leader, follower = pty.openpty()
    try:
        done = memctl(
            daemon, "recall", "reindex", "-w", TEAM, stdout=subprocess.PIPE, stderr=follower
        )
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:
                break
            if not data:
                break
            shown += data
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert done.returncode == 0, shown
    assert b"drawers re-embedded" in shown and b"[####" in shown
    assert done.stdout.startswith("reindex complete:")


def test_purge_prunes_the_audit_when_asked_and_audits_that(daemon: LiveDaemon) -> None:
    import sqlite3
    import time

    url = f"/v1/workspaces/{TEAM}/recall"
    with daemon.http(daemon.admin_token, timeout=60) as http:
        note = http.post(
            f"{url}/ingest", json={"content": "audit pruning keeps a soft-deleted note"}
        )
        drawer = note.json()["sources"][0]["drawer_ids"][0]
        assert http.delete(f"{url}/drawers/{drawer}").status_code == 200
    database = daemon.state_dir / "recall" / f"{TEAM}.db"

    def audit_rows() -> list[tuple[str, str]]:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
            return connection.execute("SELECT action, detail FROM audit ORDER BY seq").fetchall()

    before = audit_rows()
    assert len(before) >= 2  # the ingest and the delete, and what earlier tests wrote
    # The audit alone: the soft-deleted drawer stays until a purge of drawers.
    done = memctl(
        daemon,
        "-w",
        TEAM,
        "recall",
        "purge",
        "--audit-before",
        str(int(time.time()) + 5),
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
    assert "removed 0 drawer(s) and" in done.stdout
    left = audit_rows()
    assert [action for action, _detail in left] == ["audit_prune", "purge"]
    assert json.loads(left[0][1])["audit_removed"] == len(before)
    with daemon.http(daemon.admin_token) as http:
        assert http.get(f"{url}/status").json()["deleted_count"] >= 1
        refused = http.post(f"{url}/purge", json={"audit_before": "soon"})
    assert (
        refused.status_code == 422 and refused.json()["error"]["detail"]["field"] == "audit_before"
    )


def test_parts_sent_to_a_removed_workspace_join_nothing_in_a_new_one_of_its_name(
    tmp_path: Path,
) -> None:
    workspaces = copy_examples(tmp_path / "ws", [TEAM, "writing"])
    with (
        start_daemon(tmp_path, {TEAM: workspaces[TEAM]}) as live,
        live.http(live.admin_token) as http,
    ):
        part = {"name": "notes.md", "upload": "u-removed", "parts": 2}
        old = {**part, "content": "OLDTEAMSECRET the old team decided this. ", "part": 0}
        body = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json={"files": [old]}).json()
        assert body["sources"][0]["status"] == "part_received"
        assert http.delete(f"/v1/workspaces/{TEAM}").status_code == 200
        added = http.post("/v1/workspaces", json={"name": TEAM, "path": workspaces["writing"]})
        assert added.status_code == 201, added.text

        new = {**part, "content": "new team text.", "part": 1}
        body = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json={"files": [new]}).json()

        assert body["chunks"] == 0 and "in order" in body["failed"][0]["reason"]
        found = http.get(f"/v1/workspaces/{TEAM}/recall/search", params={"q": "OLDTEAMSECRET"})
        assert found.json()["hits"] == []
