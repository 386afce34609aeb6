"""build_snapshot on real files: half-done editor saves are held back, and nothing is
read from outside the workspace's real path."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest

from memhubd.runtime.snapshot import (
    Pending,
    SavePolicy,
    Snapshot,
    WorkspaceUnavailable,
    build_snapshot,
)

FACTS = "".join(
    f'fact notes.f{n} {{\n  claim: "Fact number {n}."\n  evidence {{ source: "t" quote: "q" }}\n}}\n'
    for n in range(4)
)
HALF = FACTS[: FACTS.index("fact notes.f2")]
GRACE = SavePolicy(vanish_grace_s=30.0, settle_s=5.0)  # long: nothing expires by itself


def ids(snapshot: Snapshot) -> set[str]:
    return {d.id for d in snapshot.workspace.declarations}


def settled(path: Path, age_s: float = 60.0) -> None:
    """Date the file back, as if its last write were `age_s` ago."""
    then = time.time() - age_s
    os.utime(path, (then, then))


def expired(snapshot: Snapshot) -> dict[str, Pending]:
    """The snapshot's pending paths as if their grace and settle times had passed."""
    long_ago = time.monotonic() - 3600
    return {
        path: dataclasses.replace(p, seen=long_ago, vanished=long_ago if p.vanished else None)
        for path, p in snapshot.pending.items()
    }


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "facts.mem").write_text(FACTS, encoding="utf-8")
    return root


def first(root: Path, policy: SavePolicy = GRACE) -> Snapshot:
    snapshot = build_snapshot("ws", str(root), None, policy=policy)
    assert len(ids(snapshot)) == 4
    return snapshot


# --- missing and empty files ----------------------------------------------------------------


@pytest.mark.parametrize("how", ["emptied", "deleted"])
def test_a_file_that_goes_empty_or_missing_keeps_its_declarations_until_the_grace_ends(
    workspace: Path, how: str
) -> None:
    before = first(workspace)
    target = workspace / "facts.mem"
    if how == "emptied":
        target.write_bytes(b"")
    else:
        target.unlink()

    held = build_snapshot("ws", str(workspace), before, policy=GRACE)
    assert ids(held) == ids(before)
    assert str(target) in held.pending and held.recheck_at is not None
    assert held.recheck_at > time.monotonic() + 20  # about one grace period from now

    again = build_snapshot("ws", str(workspace), held, policy=GRACE)
    assert ids(again) == ids(before)
    assert again.pending[str(target)].vanished == held.pending[str(target)].vanished

    gone = build_snapshot("ws", str(workspace), again, policy=GRACE, pending=expired(again))
    assert ids(gone) == set()
    assert gone.pending == {} and gone.recheck_at is None


def test_a_file_written_again_within_the_grace_is_served_with_its_new_bytes(
    workspace: Path,
) -> None:
    before = first(workspace)
    target = workspace / "facts.mem"
    target.unlink()
    held = build_snapshot("ws", str(workspace), before, policy=GRACE)
    target.write_text(FACTS + FACTS.replace("notes.f", "notes.g"), encoding="utf-8")
    settled(target)
    after = build_snapshot("ws", str(workspace), held, policy=GRACE)
    assert len(ids(after)) == 8 and after.pending == {}


def test_without_a_grace_period_a_deleted_file_is_dropped_at_once(workspace: Path) -> None:
    policy = SavePolicy(vanish_grace_s=0, settle_s=0)
    before = first(workspace, policy)
    (workspace / "facts.mem").unlink()
    assert ids(build_snapshot("ws", str(workspace), before, policy=policy)) == set()


def test_a_held_file_keeps_its_place_among_the_files(workspace: Path) -> None:
    (workspace / "a.mem").write_text(FACTS.replace("notes.f", "notes.a"), encoding="utf-8")
    (workspace / "z.mem").write_text(FACTS.replace("notes.f", "notes.z"), encoding="utf-8")
    before = build_snapshot("ws", str(workspace), None, policy=GRACE)
    (workspace / "facts.mem").unlink()
    held = build_snapshot("ws", str(workspace), before, policy=GRACE)
    assert [f.path for f in held.files] == [f.path for f in before.files]


# --- saves written in steps -----------------------------------------------------------------


def test_bytes_still_being_written_are_not_served_until_they_settle(workspace: Path) -> None:
    before = first(workspace)
    target = workspace / "facts.mem"
    target.write_text(HALF, encoding="utf-8")  # parses, with fewer declarations

    held = build_snapshot("ws", str(workspace), before, policy=GRACE)
    assert ids(held) == ids(before)
    assert held.pending[str(target)].vanished is None
    assert held.recheck_at is not None

    settled(target)
    served = build_snapshot("ws", str(workspace), held, policy=GRACE)
    assert ids(served) == {"fact:notes.f0", "fact:notes.f1"}
    assert served.pending == {}


def test_bytes_seen_unchanged_for_the_settle_time_are_served_whatever_their_mtime(
    workspace: Path,
) -> None:
    # A file system whose clock runs ahead: the modification time is in the future.
    before = first(workspace)
    target = workspace / "facts.mem"
    target.write_text(HALF, encoding="utf-8")
    ahead = time.time() + 3600
    os.utime(target, (ahead, ahead))
    held = build_snapshot("ws", str(workspace), before, policy=GRACE)
    assert ids(held) == ids(before)
    served = build_snapshot("ws", str(workspace), held, policy=GRACE, pending=expired(held))
    assert len(ids(served)) == 2


def test_fresh_bytes_that_keep_every_declaration_are_served_at_once(workspace: Path) -> None:
    before = first(workspace)
    (workspace / "facts.mem").write_text(FACTS + FACTS.replace("notes.f", "notes.g"), "utf-8")
    (workspace / "new.mem").write_text(FACTS.replace("notes.f", "notes.n"), encoding="utf-8")
    served = build_snapshot("ws", str(workspace), before, policy=GRACE)
    assert len(ids(served)) == 12 and served.pending == {}


def test_fresh_bytes_that_do_not_parse_wait_to_settle_before_degrading(workspace: Path) -> None:
    before = first(workspace)
    target = workspace / "facts.mem"
    target.write_text(FACTS + 'fact notes.cut {\n  claim: "half', encoding="utf-8")
    held = build_snapshot("ws", str(workspace), before, policy=GRACE)
    assert not held.problems and str(target) in held.pending
    settled(target)
    degraded = build_snapshot("ws", str(workspace), held, policy=GRACE)
    assert [p.kind for p in degraded.problems] == ["parse_error"]
    assert ids(degraded) == ids(before)


def test_a_build_that_only_holds_a_save_back_reuses_the_served_workspace(
    workspace: Path,
) -> None:
    before = first(workspace)
    (workspace / "facts.mem").write_text(HALF, encoding="utf-8")
    held = build_snapshot("ws", str(workspace), before, policy=GRACE)
    assert held.workspace is before.workspace


def test_a_trusted_build_serves_fresh_bytes_at_once(workspace: Path) -> None:
    before = first(workspace)
    (workspace / "facts.mem").write_text(HALF, encoding="utf-8")
    served = build_snapshot("ws", str(workspace), before, policy=GRACE, trusted=True)
    assert len(ids(served)) == 2


def test_the_first_build_serves_what_is_there(workspace: Path) -> None:
    (workspace / "facts.mem").write_text(HALF, encoding="utf-8")
    assert len(ids(build_snapshot("ws", str(workspace), None, policy=GRACE))) == 2


# --- type packs -----------------------------------------------------------------------------


def test_a_type_pack_that_vanishes_keeps_the_last_types_for_the_grace(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    source = Path(__file__).resolve().parents[3] / "examples" / "writing"
    root.mkdir()
    for name in ("memdsl.json", "voice.mem"):
        (root / name).write_bytes((source / name).read_bytes())
    (root / "schemas").mkdir()
    for pack in (source / "schemas").iterdir():
        (root / "schemas" / pack.name).write_bytes(pack.read_bytes())
    before = build_snapshot("ws", str(root), None, policy=GRACE)
    (root / "memdsl.json").unlink()
    held = build_snapshot("ws", str(root), before, policy=GRACE)
    assert held.registry_state is before.registry_state
    assert held.recheck_at is not None
    later = build_snapshot("ws", str(root), held, policy=GRACE, pending=expired(held))
    assert later.registry_state is not before.registry_state


# --- symbolic links -------------------------------------------------------------------------


def test_a_link_to_a_file_outside_the_workspace_is_refused_and_reported(
    workspace: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.mem"
    secret.write_text(FACTS.replace("notes.f", "notes.secret"), encoding="utf-8")
    (workspace / "x.mem").symlink_to(secret)
    (workspace / "passwd.mem").symlink_to("/etc/passwd")
    snapshot = build_snapshot("ws", str(workspace), None, policy=GRACE)
    assert ids(snapshot) == {f"fact:notes.f{n}" for n in range(4)}
    assert {f.path for f in snapshot.files} == {str(workspace / "facts.mem")}
    refused = {p.file: p for p in snapshot.problems}
    assert set(refused) == {str(workspace / "x.mem"), str(workspace / "passwd.mem")}
    for problem in refused.values():
        assert problem.kind == "outside_workspace"
        assert str(tmp_path) not in problem.message and "/etc" not in problem.message


def test_a_link_repointed_outside_is_dropped_at_once(workspace: Path, tmp_path: Path) -> None:
    inner = workspace / "notes.txt"
    inner.write_text(FACTS.replace("notes.f", "notes.l"), encoding="utf-8")
    link = workspace / "linked.mem"
    link.symlink_to("notes.txt")
    before = build_snapshot("ws", str(workspace), None, policy=GRACE)
    assert "fact:notes.l0" in ids(before)  # a link that stays inside is followed
    outside = tmp_path / "outside.txt"
    outside.write_bytes(inner.read_bytes())
    link.unlink()
    link.symlink_to(outside)
    after = build_snapshot("ws", str(workspace), before, policy=GRACE)
    assert "fact:notes.l0" not in ids(after)
    assert [p.kind for p in after.problems] == ["outside_workspace"]


def test_a_link_to_another_source_of_the_workspace_is_not_served_twice(workspace: Path) -> None:
    (workspace / "again.mem").symlink_to("facts.mem")
    snapshot = build_snapshot("ws", str(workspace), None, policy=GRACE)
    assert [f.path for f in snapshot.files] == [str(workspace / "facts.mem")]
    assert len(snapshot.workspace.declarations) == 4 and not snapshot.problems


def test_a_linked_directory_is_not_descended(workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "more.mem").write_text(FACTS.replace("notes.f", "notes.e"), encoding="utf-8")
    (workspace / "linked").symlink_to(elsewhere, target_is_directory=True)
    assert len(ids(build_snapshot("ws", str(workspace), None, policy=GRACE))) == 4


def test_a_fifo_named_like_a_source_is_refused_without_blocking(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe.mem")
    snapshot = build_snapshot("ws", str(workspace), None, policy=GRACE)
    assert [(p.kind, Path(p.file).name) for p in snapshot.problems] == [("read_error", "pipe.mem")]


def test_a_workspace_reached_through_a_link_is_read_normally(
    workspace: Path, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(workspace, target_is_directory=True)
    snapshot = build_snapshot("ws", str(alias), None, policy=GRACE)
    assert len(ids(snapshot)) == 4 and not snapshot.problems


@pytest.mark.parametrize("how", ["manifest link", "schema link", "dotdot entry"])
def test_a_manifest_or_type_pack_outside_the_workspace_is_not_read(
    tmp_path: Path, how: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.mem").write_text(FACTS, encoding="utf-8")
    outside = tmp_path / "pack.memschema.json"
    outside.write_text('{"not": "read"}', encoding="utf-8")
    manifest = {"schema_version": "memdsl.workspace.v1", "schemas": ["pack.memschema.json"]}
    if how == "manifest link":
        (tmp_path / "memdsl.json").write_text(json.dumps(manifest), encoding="utf-8")
        (root / "memdsl.json").symlink_to(tmp_path / "memdsl.json")
    else:
        if how == "dotdot entry":
            manifest["schemas"] = ["../pack.memschema.json"]
        else:
            (root / "pack.memschema.json").symlink_to(outside)
        (root / "memdsl.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(WorkspaceUnavailable) as raised:
        build_snapshot("ws", str(root), None, policy=GRACE)
    assert raised.value.problem.kind == "outside_workspace"
    assert raised.value.problem.file == str(root / "memdsl.json")
    assert str(tmp_path / "pack") not in raised.value.problem.message
