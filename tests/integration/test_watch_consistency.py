"""A running daemon serves what a daemon started on the same files would serve, through
its events (well under a second), not only at the next periodic re-scan: sources in
hidden directories such as `.hg` or `.git`, which a start's walk reads, and sources that
are symbolic links to a file of the workspace whose name is not a source's."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.security.test_role_hiding import wait_for

WS = "writing"
# Far beyond every wait below: what is served in time came through an event.
NO_RESCAN = {"watch.rescan_interval_s": 600.0}
EVENT_WAIT_S = 3.0  # an event is served within ~100 ms; the re-scan would take 600 s

FACT = """module notes.{name}

fact notes.{name} {{
  claim: "{claim}"
  evidence {{ source: "test" quote: "{name}" }}
}}
"""


def claims(daemon: LiveDaemon) -> dict[str, str]:
    """Every served declaration's id -> its claim."""
    with daemon.unix(daemon.admin_token) as client:
        answer = client.get(f"/v1/workspaces/{WS}/declarations?include_inactive=true&limit=500")
    assert answer.status_code == 200
    return {item["id"]: str(item.get("claim") or "") for item in answer.json()["items"]}


def fresh_claims(tmp_path: Path, workspaces: dict[str, str]) -> dict[str, str]:
    """What a daemon started now on the same files (and a state of its own) serves."""
    workdir = tmp_path / f"fresh-{time.monotonic_ns()}"
    with start_daemon(workdir, workspaces, **NO_RESCAN) as fresh:
        return claims(fresh)


def test_sources_under_hidden_directories_are_served_as_a_start_serves_them(
    tmp_path: Path,
) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    root = Path(workspaces[WS])
    with start_daemon(tmp_path, workspaces, **NO_RESCAN) as daemon:
        # A source made in a new hidden directory.
        (root / ".hg").mkdir()
        (root / ".hg" / "notes.mem").write_text(FACT.format(name="hg", claim="under hg"))
        # And one written at once into new directories under .git: it may well exist
        # before the watch on its directory does.
        deep = root / ".git" / "objects" / "ab"
        deep.mkdir(parents=True)
        (deep / "deep.mem").write_text(FACT.format(name="git", claim="under git"))

        served = wait_for(
            lambda: (
                (c := claims(daemon)).get("fact:notes.hg") == "under hg"
                and c.get("fact:notes.git") == "under git"
                and c
            ),
            EVENT_WAIT_S,
        )
        assert served == fresh_claims(tmp_path, workspaces)

        # An edit, then the directories removed, as a fresh start would see them.
        (root / ".hg" / "notes.mem").write_text(FACT.format(name="hg", claim="edited"))
        wait_for(lambda: claims(daemon).get("fact:notes.hg") == "edited", EVENT_WAIT_S)
        shutil.rmtree(root / ".hg")
        shutil.rmtree(root / ".git")
        # A vanished source keeps serving for vanish_grace_ms (1 s) first.
        served = wait_for(
            lambda: (
                (c := claims(daemon))
                and "fact:notes.hg" not in c
                and "fact:notes.git" not in c
                and c
            ),
            EVENT_WAIT_S + 1,
        )
        assert served == fresh_claims(tmp_path, workspaces)


def test_an_edit_of_the_file_a_source_link_leads_to_is_served(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    root = Path(workspaces[WS])
    target = root / "drafts" / "target.txt"
    target.parent.mkdir()
    target.write_text(FACT.format(name="linked", claim="v1"))
    (root / "via.mem").symlink_to(os.path.join("drafts", "target.txt"))
    # A link to a link: an edit of the file at the end of the chain counts too.
    (root / "hop.txt").symlink_to(os.path.join("drafts", "target2.txt"))
    (root / "drafts" / "target2.txt").write_text(FACT.format(name="chained", claim="c1"))
    (root / "chain.mem").symlink_to("hop.txt")
    with start_daemon(tmp_path, workspaces, **NO_RESCAN) as daemon:
        assert claims(daemon)["fact:notes.linked"] == "v1"
        assert claims(daemon)["fact:notes.chained"] == "c1"

        # Written in place.
        target.write_text(FACT.format(name="linked", claim="v2"))
        wait_for(lambda: claims(daemon)["fact:notes.linked"] == "v2", EVENT_WAIT_S)

        # Saved atomically: a new file renamed over the target.
        temporary = target.with_name(".target.txt.tmp")
        temporary.write_text(FACT.format(name="linked", claim="v3"))
        os.replace(temporary, target)
        wait_for(lambda: claims(daemon)["fact:notes.linked"] == "v3", EVENT_WAIT_S)

        (root / "drafts" / "target2.txt").write_text(FACT.format(name="chained", claim="c2"))
        served = wait_for(
            lambda: (c := claims(daemon)).get("fact:notes.chained") == "c2" and c,
            EVENT_WAIT_S,
        )
        assert served == fresh_claims(tmp_path, workspaces)
