"""A workspace whose root link is repointed at another served workspace's directory:
its readers never see the other's files, and its review queue stays its own."""

from __future__ import annotations

import time
from pathlib import Path

from tests.integration.conftest import copy_examples, start_daemon

FACT = (
    'fact ledger.kept {\n  subject: Service.Ledger\n  claim: "Kept."\n'
    '  evidence { source: "chat" quote: "kept" }\n}\n'
)


def test_a_repointed_root_link_serves_and_reviews_nothing_of_the_other_workspace(
    tmp_path: Path,
) -> None:
    examples = copy_examples(tmp_path / "ws", ["team-coding", "assistant"])
    link = tmp_path / "linked"
    link.symlink_to(examples["team-coding"])
    # a file of each that does not parse: its text is read from disk when shown
    (Path(examples["team-coding"]) / "broken.mem").write_text("fact broken {\n", encoding="utf-8")
    (Path(examples["assistant"]) / "broken.mem").write_text("SECRET {\n", encoding="utf-8")
    workspaces = {"linked": str(link), "other": examples["assistant"]}
    with start_daemon(tmp_path, workspaces) as daemon:
        daemon.add_token("mine", "read:summary,write:candidate", workspaces=["linked"])
        with daemon.http(daemon.tokens["mine"]) as client:
            before = sorted(
                f["path"] for f in client.get("/v1/workspaces/linked/files").json()["files"]
            )
            link.unlink()
            link.symlink_to(examples["assistant"])
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:  # the watcher's next look, or a rescan
                with daemon.http(daemon.admin_token) as admin:
                    status = admin.get("/v1/workspaces/linked").json()
                if status.get("problems") and any(
                    "another served workspace" in p["message"] for p in status["problems"]
                ):
                    break
                time.sleep(0.1)
            else:
                raise AssertionError(f"never reported: {status}")
            assert status["health"] == "degraded"
            with daemon.http(daemon.admin_token) as admin:
                shown = admin.get("/v1/workspaces/linked/files/broken.mem").text
            assert "fact broken" in shown and "SECRET" not in shown
            after = sorted(
                f["path"] for f in client.get("/v1/workspaces/linked/files").json()["files"]
            )
            assert after == before
            proposed = client.post("/v1/workspaces/linked/proposals", json={"source": FACT})
            assert proposed.status_code == 201, proposed.text
        staged = Path(examples["team-coding"]) / ".memdsl" / "proposals"
        assert any(staged.iterdir())
        assert not (Path(examples["assistant"]) / ".memdsl" / "proposals").exists() or not any(
            (Path(examples["assistant"]) / ".memdsl" / "proposals").iterdir()
        )
