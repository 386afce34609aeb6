"""A restarted daemon serves from its persisted parse cache: same answers as the first
run, files edited while it was down served as edited, a damaged cache ignored."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from memhubd.auth.tokens import TokenStore
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
EXTRA = (
    '\nfact restart.extra { claim: "Added while the daemon was down: deploy on fridays." '
    'evidence { source: "t" quote: "q" } }\n'
)


def served(daemon: LiveDaemon) -> dict[str, Any]:
    with daemon.http(daemon.admin_token) as client:
        query = client.post(f"/v1/workspaces/{WS}/query", json={"query": "force push main deploy"})
        check = client.post(
            f"/v1/workspaces/{WS}/check",
            json={"task": "push main", "candidate": "git push --force origin main"},
        )
        lint = client.get(f"/v1/workspaces/{WS}/lint")
    assert query.status_code == check.status_code == lint.status_code == 200
    return {"query": query.json(), "check": check.json(), "lint": lint.json()}


def restart(workdir: Path, workspaces: dict[str, str]) -> Any:
    """start_daemon again on the same state dir (it registers its own admin token)."""
    TokenStore(workdir / "state").revoke("admin")
    return start_daemon(workdir, workspaces)


def saved_entries(state: Path, at_least: int) -> list[Path]:
    """The cache is written off the request path: wait until it holds the workspace."""
    deadline = time.monotonic() + 30
    while True:
        found = sorted((state / "parse-cache").glob("*/*.entry"))
        if len(found) >= at_least or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def saved_snapshots(state: Path) -> list[Path]:
    """The consolidated snapshot file is written right after the entries: wait for it."""
    deadline = time.monotonic() + 30
    while not (found := sorted((state / "parse-cache").glob("*/snapshot"))):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return found


def test_a_restart_serves_identical_answers_from_the_cache(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    sources = sorted(Path(workspaces[WS]).rglob("*.mem"))
    with start_daemon(tmp_path, workspaces) as first:
        before = served(first)
        entries = saved_entries(first.state_dir, len(sources))
    assert len(entries) == len(sources)

    with restart(tmp_path, workspaces) as second:
        assert served(second) == before

    # Edited while down: served as edited, the same as a daemon without any cache.
    with sources[0].open("a", encoding="utf-8") as handle:
        handle.write(EXTRA)
    with restart(tmp_path, workspaces) as third:
        after = served(third)
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    with start_daemon(fresh_dir, workspaces) as fresh:
        assert after == served(fresh)
    assert after != before


def test_a_damaged_cache_is_ignored(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    sources = sorted(Path(workspaces[WS]).rglob("*.mem"))
    with start_daemon(tmp_path, workspaces) as first:
        before = served(first)
        entries = saved_entries(first.state_dir, len(sources))
        snapshots = saved_snapshots(first.state_dir)
    assert len(snapshots) == 1
    for entry in entries + snapshots:
        data = bytearray(entry.read_bytes())
        data[-1] ^= 0xFF
        entry.write_bytes(bytes(data))

    with restart(tmp_path, workspaces) as second:
        assert served(second) == before
