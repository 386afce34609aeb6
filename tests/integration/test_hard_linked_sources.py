"""A source hard-linked under a second name in its workspace: an edit through one name
is an edit of both, as memdsl reads them. inotify names only the name written through,
and the other one was served stale until the periodic re-scan."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon, wait_for

APPENDED = '\nfact writing.hard_linked {\n  claim: "Appended through one name."\n}\n'


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    root = copy_examples(tmp_path, ["writing"])["writing"]
    os.link(os.path.join(root, "voice.mem"), os.path.join(root, "voice-twin.mem"))
    # No periodic re-scan: what is served in time is what the watch delivered.
    with start_daemon(tmp_path, {"one": root}, **{"watch.rescan_interval_s": 0}) as live:
        yield live


def test_an_append_through_one_name_is_served_under_both(daemon: LiveDaemon) -> None:
    root = Path(daemon.workspaces["one"])
    with daemon.http(daemon.admin_token) as client:

        def counts() -> dict[str, int]:
            listed = client.get("/v1/workspaces/one/files").json()["files"]
            return {os.path.basename(f["path"]): f["declarations"] for f in listed}

        wait_for(lambda: counts().get("voice-twin.mem", 0) > 0)
        before = counts()
        assert before["voice.mem"] == before["voice-twin.mem"]

        # When a declaration is appended through the first name
        with open(root / "voice.mem", "a", encoding="utf-8") as handle:
            handle.write(APPENDED)

        # Then both names serve it
        wait_for(lambda: counts()["voice.mem"] == before["voice.mem"] + 1)
        wait_for(lambda: counts()["voice-twin.mem"] == before["voice-twin.mem"] + 1)
