"""Attack: reach a file outside the workspace through a path the daemon takes from a caller.

Raw files are served only from the snapshot's own list of sources (a caller's file id
is looked up, never opened), proposal ids are validated before any path is made from
them, and approval targets must resolve inside the workspace (symlinks included).
Symlinked sources themselves are covered by test_symlinks.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
BASE = f"/v1/workspaces/{WS}"
NATS = """fact tidewater.uses_nats {
  subject: Service.Tidewater
  claim: "Tidewater publishes shipment events to NATS JetStream."
  evidence { source: "chat" quote: "we publish to jetstream now" }
}
"""

FILE_IDS = [
    "../../../../etc/passwd",
    "/etc/passwd",
    "%2e%2e/%2e%2e/etc/passwd",
    "..%2f..%2fetc%2fpasswd",
    "decisions.mem/../../assistant/profile.mem",
    "../assistant/profile.mem",
    "./../" * 20 + "etc/hostname",
    "\\..\\..\\etc\\passwd",
]


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "/"
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("file_id", FILE_IDS)
def test_file_ids_never_leave_the_workspace(shared_daemon: LiveDaemon, file_id: str) -> None:
    with shared_daemon.http(shared_daemon.admin_token) as client:
        response = client.get(f"{BASE}/files/{file_id}", headers={"accept": "application/json"})

    assert response.status_code in (404, 422), response.text
    assert response.json()["error"]["code"] in ("not_found", "invalid")
    assert "root:" not in response.text


@pytest.mark.parametrize(
    "into",
    ["../escape.mem", "/etc/escape.mem", ".memdsl/proposals/x.mem", "sub/../../x.mem", "x.txt"],
)
def test_approval_targets_never_leave_the_workspace(tmp_path: Path, into: str) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    root = Path(workspaces[WS])
    with start_daemon(tmp_path, workspaces) as daemon:
        daemon.add_token("agent", "write:candidate", roles=["*"])
        with daemon.http(daemon.tokens["agent"]) as client:
            proposal_id = client.post(f"{BASE}/proposals", json={"source": NATS}).json()[
                "proposal_id"
            ]
        before, outside = tree(root), set(root.parent.iterdir())
        with daemon.http(daemon.admin_token) as client:
            response = client.post(f"{BASE}/proposals/{proposal_id}/approve", json={"into": into})

        assert response.status_code == 422, response.text
        assert tree(root) == before
        assert set(root.parent.iterdir()) == outside


def test_an_approval_target_symlinked_outside_is_refused(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    root = Path(workspaces[WS])
    victim = tmp_path / "victim.mem"
    victim.write_text("# not memory\n", encoding="utf-8")
    (root / "link.mem").symlink_to(victim)
    with start_daemon(tmp_path, workspaces) as daemon:
        daemon.add_token("agent", "write:candidate", roles=["*"])
        with daemon.http(daemon.tokens["agent"]) as client:
            proposal_id = client.post(f"{BASE}/proposals", json={"source": NATS}).json()[
                "proposal_id"
            ]
        with daemon.http(daemon.admin_token) as client:
            response = client.post(
                f"{BASE}/proposals/{proposal_id}/approve", json={"into": "link.mem"}
            )

    assert response.status_code == 422, response.text
    assert victim.read_text(encoding="utf-8") == "# not memory\n"


@pytest.mark.parametrize("proposal_id", ["../../etc/passwd", "..p-x", "p-1/../../x", "%2e%2e"])
def test_proposal_ids_are_validated_before_any_path_is_made(
    shared_daemon: LiveDaemon, proposal_id: str
) -> None:
    with shared_daemon.http(shared_daemon.admin_token) as client:
        shown = client.get(f"{BASE}/proposals/{proposal_id}")
        approved = client.post(f"{BASE}/proposals/{proposal_id}/approve", json={"into": "x.mem"})

    for response in (shown, approved):
        assert response.status_code in (404, 422), response.text
        assert "error" in response.json()
