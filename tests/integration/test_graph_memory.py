"""Graph answers do not make memory grow with reloads: derived triples and governed
rooms are cached per snapshot (and per caller view) and freed with it."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from memhubd.graph.derived import cached_workspaces
from memhubd.runtime.snapshot import Snapshot
from memhubd.service import graph
from tests.integration.conftest import LiveDaemon, start_daemon

WS = "mem"
CYCLES = 12
BOUND = 4  # the served snapshot, plus a few a reload or a request still holds

SOURCE = """module mem.rules

boundary deploy.freeze {
  scope: global
  subject: Project.Public
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


def read_graph(daemon: LiveDaemon, secret: str) -> None:
    base = f"/v1/workspaces/{WS}"
    with daemon.http(secret) as http:
        for response in (
            http.get(f"{base}/kg/triples", params={"all": "true"}),
            http.get(f"{base}/kg/stats"),
            http.get(f"{base}/kg/timeline", params={"entity": "Project.Public"}),
            http.get("/v1/tunnels"),
            http.post(f"{base}/fact-check", json={"text": "Projct deploy now."}),
        ):
            assert response.status_code == 200, response.text


def live(kind: type) -> int:
    gc.collect()
    return sum(1 for item in gc.get_objects() if isinstance(item, kind))


def test_graph_caches_are_freed_with_their_snapshots(tmp_path: Path) -> None:
    root = tmp_path / "ws" / WS
    root.mkdir(parents=True)
    notes = root / "notes.mem"
    (root / "rules.mem").write_text(SOURCE, encoding="utf-8")
    notes.write_text("", encoding="utf-8")
    with start_daemon(tmp_path, {WS: str(root)}) as daemon:
        agent = daemon.add_token("agent", "read:summary,read:search", workspaces=[WS])
        ops = daemon.add_token("ops", "read:summary,read:search", workspaces=[WS], roles=["ops"])
        for n in range(CYCLES):
            before = generation(daemon)
            with notes.open("a", encoding="utf-8") as handle:
                handle.write(f'decision note.n{n} {{ decision: "N{n}." depends_on: note.n0 }}\n')
            deadline = time.monotonic() + 15
            while generation(daemon) <= before:
                assert time.monotonic() < deadline, "the edit was never served"
                time.sleep(0.02)
            for secret in (agent, ops, daemon.admin_token):
                read_graph(daemon, secret)
        with daemon.http(agent) as http:
            answer = http.get(f"/v1/workspaces/{WS}/kg/triples", params={"predicate": "depends_on"})
        assert len(answer.json()["triples"]) == CYCLES
        assert live(Snapshot) <= BOUND
        assert cached_workspaces() <= BOUND
        gc.collect()
        assert len(graph._GOVERNED) <= BOUND * 3  # one per role set of each live snapshot
