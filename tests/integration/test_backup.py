"""`memhubd backup` copies a live daemon's state directory into one a daemon can start
from: every recall store whole and consistent while ingests go on (a file-by-file copy
of a store in WAL mode can come back corrupt), tokens kept, the parse cache left out."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from memhubd.auth.tokens import TokenStore
from tests.integration.conftest import copy_examples, start_daemon

WS = "team-coding"


def memhubd(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memhubd", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_backup_taken_during_ingests_restores_every_drawer_it_saw(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    stop = threading.Event()
    written: list[int] = []
    with start_daemon(tmp_path / "live", workspaces) as daemon:
        keeper = daemon.add_token("keeper", "all", roles=["*"])
        with daemon.http(daemon.admin_token) as client:
            first = client.post(
                f"/v1/workspaces/{WS}/recall/ingest",
                json={"content": "The quay cache warms from the ledger at start.", "source": "a"},
            )
            assert first.status_code == 201, first.text

        def ingest() -> None:
            with daemon.http(daemon.admin_token) as client:
                for i in range(400):
                    if stop.is_set():
                        return
                    text = f"note {i}: the harbour crane {i} lifts containers " * 20
                    answer = client.post(
                        f"/v1/workspaces/{WS}/recall/ingest",
                        json={"content": text, "source": f"n{i}"},
                    )
                    assert answer.status_code == 201, answer.text
                    written.append(i)

        writer = threading.Thread(target=ingest)
        writer.start()
        try:
            backups = []
            for n in range(3):
                target = tmp_path / f"backup{n}"
                done = memhubd(
                    "backup", str(target), "--state-dir", str(daemon.state_dir), "--json"
                )
                assert done.returncode == 0, done.stderr
                backups.append((target, json.loads(done.stdout)))
        finally:
            stop.set()
            writer.join(60)
    assert written, "no ingest ran beside the backups"

    for target, report in backups:
        assert (target / "tokens.json").is_file()
        assert not (target / "parse-cache").exists()
        assert {"path": "parse-cache/", "reason": "rebuilt at start"} in report["skipped"]
        assert not list(target.rglob("*-wal")), "a copy is a file of its own"
        stores = [c["path"] for c in report["copied"] if c["kind"] == "sqlite"]
        assert f"recall/{WS}.db" in stores
        for path in stores:
            with sqlite3.connect(target / path) as copy:
                assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok", path

    # A daemon started on the last copy serves what it holds, to the tokens it holds.
    restored = tmp_path / "restored"
    shutil.copytree(backups[-1][0], restored / "state")
    TokenStore(restored / "state").revoke("admin")  # the test daemon makes its own
    with start_daemon(restored, workspaces) as daemon, daemon.http(keeper) as client:
        found = client.get(f"/v1/workspaces/{WS}/recall/search", params={"q": "quay ledger"})
        assert found.status_code == 200, found.text
        assert "quay cache warms" in found.json()["hits"][0]["content"]


def test_a_backup_refuses_a_destination_that_holds_files(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "tokens.json").write_text("{}")
    target = tmp_path / "full"
    target.mkdir()
    (target / "keep.txt").write_text("mine")

    done = memhubd("backup", str(target), "--state-dir", str(state))

    assert done.returncode == 2
    assert "not an empty directory" in done.stderr
    assert (target / "keep.txt").read_text() == "mine"
