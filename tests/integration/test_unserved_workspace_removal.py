"""A run-time workspace left out at a start (over `max_workspaces`) and then removed
takes its recall state with it, as a served one's removal does: a workspace added
later under its name starts empty."""

from __future__ import annotations

from pathlib import Path

from memhubd.auth.tokens import TokenStore
from tests.integration.conftest import copy_examples, start_daemon

BASE = "team-coding"


def test_an_unserved_workspace_removed_leaves_nothing_to_its_name(tmp_path: Path) -> None:
    served = copy_examples(tmp_path / "ws", [BASE])
    first, second, later = (tmp_path / name for name in ("w1", "w2", "later"))
    for folder in (first, second, later):
        folder.mkdir()
        (folder / "a.mem").write_text('fact F { statement: "x" }\n', encoding="utf-8")
    with (
        start_daemon(tmp_path, served, **{"limits.max_workspaces": 3}) as daemon,
        daemon.http(daemon.admin_token) as http,
    ):
        for name, folder in (("w1", first), ("w2", second)):
            added = http.post("/v1/workspaces", json={"name": name, "path": str(folder)})
            assert added.status_code == 201, added.text
        note = {"content": "the secret project zebra runs on postgres", "source": "s"}
        stored = http.post("/v1/workspaces/w2/recall/ingest", json=note)
        assert stored.status_code == 201, stored.text
    TokenStore(tmp_path / "state").revoke("admin")  # each start makes its own
    with (
        start_daemon(tmp_path, served, **{"limits.max_workspaces": 2}) as daemon,
        daemon.http(daemon.admin_token) as http,
    ):
        assert http.get("/v1/workspaces/w2").status_code == 404  # over the limit
        removed = http.delete("/v1/workspaces/w2")
        assert removed.json() == {"removed": "w2", "served": False}, removed.text
        assert http.delete("/v1/workspaces/w1").status_code == 200
        added = http.post("/v1/workspaces", json={"name": "w2", "path": str(later)})
        assert added.status_code == 201, added.text
        found = http.post("/v1/workspaces/w2/recall/search", json={"query": "zebra"})
    assert found.status_code == 200 and found.json()["hits"] == [], found.text
    archived = sorted(p.name for p in (tmp_path / "state" / "removed").iterdir())
    assert [name for name in archived if name.startswith("w2-")], archived
