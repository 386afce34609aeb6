"""Memory does not grow with reloads: snapshots that served reads are freed.

An attacker (or just a busy editor) who edits a workspace and queries it after each
reload must not make the daemon keep every snapshot it ever served. The daemon runs
in this process, so the live `Snapshot` objects can be counted directly.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

from memhubd.model import Workspace
from memhubd.runtime.snapshot import Snapshot
from tests.integration.conftest import LiveDaemon, start_daemon

WS = "mem"
# Ten reloads that each served reads already hold more than BOUND snapshots if any leak.
CYCLES = 10
# The served snapshot, plus at most a few a reload or a request still holds.
BOUND = 4

SOURCE = """module mem.rules

boundary deploy.freeze {
  scope: global
  claim: "Never deploy during the freeze."
  guard { deny_any: ["deploy now"] }
  evidence { source: "ops.md" quote: "freeze" }
  access_policy { readers: [ops] }
}

entity Project.Public { aliases: ["the launch"] }
"""


def generation(daemon: LiveDaemon) -> int:
    with daemon.http(daemon.admin_token) as http:
        return int(http.get(f"/v1/workspaces/{WS}").json()["generation"])


def wait_for_generation(daemon: LiveDaemon, above: int) -> None:
    deadline = time.monotonic() + 15
    while generation(daemon) <= above:
        assert time.monotonic() < deadline, "the edit was never served"
        time.sleep(0.02)


def read_everything(daemon: LiveDaemon, secret: str, n: int) -> None:
    base = f"/v1/workspaces/{WS}"
    with daemon.http(secret) as http:
        for response in (
            http.post(f"{base}/query", json={"query": f"note {n} launch"}),
            http.post(f"{base}/check", json={"task": "ship", "candidate": "deploy now"}),
            http.get(f"{base}/lint"),
            http.get(f"{base}/map"),
            http.get("/v1/status"),
        ):
            assert response.status_code == 200, response.text


def live(kind: type) -> int:
    gc.collect()
    return sum(1 for item in gc.get_objects() if isinstance(item, kind))


def test_snapshots_are_freed_after_many_edit_and_query_cycles(tmp_path: Path) -> None:
    root = tmp_path / "ws" / WS
    root.mkdir(parents=True)
    notes = root / "notes.mem"
    (root / "rules.mem").write_text(SOURCE, encoding="utf-8")
    notes.write_text("", encoding="utf-8")
    # Objects other tests left alive in this process (module-scoped daemons, caches)
    # are not this daemon's: count only what appears beyond them.
    snapshots_before, workspaces_before = live(Snapshot), live(Workspace)
    with start_daemon(tmp_path, {WS: str(root)}) as daemon:
        agent = daemon.add_token("agent", "read:summary,read:search", workspaces=[WS])
        ops = daemon.add_token("ops", "read:summary,read:search", workspaces=[WS], roles=["ops"])
        for n in range(CYCLES):
            before = generation(daemon)
            with notes.open("a", encoding="utf-8") as handle:
                handle.write(
                    f'fact note.n{n} {{ claim: "Note {n} about the launch." '
                    f'evidence {{ source: "s" quote: "q" }} }}\n'
                )
            wait_for_generation(daemon, before)
            for secret in (agent, ops, daemon.admin_token):
                read_everything(daemon, secret, n)
        assert generation(daemon) > CYCLES
        assert live(Snapshot) - snapshots_before <= BOUND
        # Each live snapshot's whole workspace plus what each role set may read of it.
        assert live(Workspace) - workspaces_before <= BOUND * 3
