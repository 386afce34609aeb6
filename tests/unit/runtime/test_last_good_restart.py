"""Memory never vanishes because a file broke: a file whose bytes stop loading is served
from its last good parse while the daemon runs, and after a restart too, whether it
broke while the daemon ran (and that state was saved) or while it was down."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhubd.check import check_compliance
from memhubd.runtime import cache as cache_module
from memhubd.runtime.cache import ParseCache
from memhubd.runtime.saves import SavePolicy
from memhubd.runtime.snapshot import Snapshot, build_snapshot, persist

RULE = """module a

boundary b.no_push {
  rule: "Never force push to main."
  scope: global
  force: hard
  guard {
    deny_any: ["force push"]
  }
}
"""
BROKEN = RULE.replace('"Never force push to main."', '"Never force push to main.')
FACT = 'module b\n\nfact f.one {\n  claim: "Main is protected."\n  scope: global\n}\n'


def verdict(snapshot: Snapshot) -> str:
    found = check_compliance(snapshot.workspace, task="push", candidate="force push to main")
    return str(found.as_dict()["verdict"])


def served_ids(snapshot: Snapshot) -> list[str]:
    return sorted(d.id for d in snapshot.workspace.declarations)


def saved_start(workspace: Path, state: Path) -> tuple[ParseCache, Snapshot]:
    """A first run's snapshot of `workspace`, saved in a parse cache in `state`."""
    cache = ParseCache(state)
    first = build_snapshot("w", str(workspace), None, cache=cache)
    persist(first, cache)
    return cache, first


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    root.mkdir()
    (root / "a.mem").write_text(RULE)
    (root / "b.mem").write_text(FACT)
    return root


def test_a_file_broken_while_running_is_served_from_its_last_good_parse_after_a_restart(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "SNAPSHOT_INTERVAL_S", 0.0)  # every save is written
    state = tmp_path / "state"
    cache, first = saved_start(workspace, state)
    assert verdict(first) == "block"
    # The file breaks while the daemon runs: its last good parse is served, and saved
    (workspace / "a.mem").write_text(BROKEN)
    running = build_snapshot("w", str(workspace), first, cache=cache, trusted=True)
    assert [p.kind for p in running.problems] == ["parse_error"]
    assert served_ids(running) == served_ids(first) and verdict(running) == "block"
    persist(running, cache)
    # A restart (a new process: nothing in memory) serves the same, still degraded
    again = build_snapshot("w", str(workspace), None, cache=ParseCache(state))
    assert [p.kind for p in again.problems] == ["parse_error"]
    assert served_ids(again) == served_ids(first)
    assert verdict(again) == "block"
    # and once the file is fixed, it is served as it is
    (workspace / "a.mem").write_text(RULE.replace("main.", "main, ever."))
    fixed = build_snapshot("w", str(workspace), None, cache=ParseCache(state))
    assert fixed.problems == [] and "ever" in fixed.workspace.by_id("b.no_push").claim_text


def test_a_file_broken_while_the_daemon_was_down_is_served_from_its_last_good_parse(
    workspace: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    cache, first = saved_start(workspace, state)
    (workspace / "a.mem").write_text(BROKEN)
    again = build_snapshot("w", str(workspace), None, cache=ParseCache(state))
    assert [p.kind for p in again.problems] == ["parse_error"]
    assert served_ids(again) == served_ids(first)
    assert verdict(again) == "block"


def test_with_nothing_saved_a_broken_file_serves_nothing(workspace: Path, tmp_path: Path) -> None:
    (workspace / "a.mem").write_text(BROKEN)
    cold = build_snapshot("w", str(workspace), None, cache=ParseCache(tmp_path / "state"))
    assert [p.kind for p in cold.problems] == ["parse_error"]
    assert served_ids(cold) == ["fact:f.one"]


def test_a_first_build_in_worker_processes_serves_the_last_good_parse_too(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd.runtime import parse_pool

    state = tmp_path / "state"
    cache = ParseCache(state)
    persist(build_snapshot("w", str(workspace), None, cache=cache), cache)
    (workspace / "a.mem").write_text(BROKEN)
    (workspace / "b.mem").write_text(FACT.replace("protected", "protected, always"))
    monkeypatch.setattr(parse_pool, "MIN_FILES", 1)  # the start's files go to the workers
    monkeypatch.setattr(parse_pool, "worker_count", lambda: 2)
    again = build_snapshot("w", str(workspace), None, cache=ParseCache(state))
    assert [p.kind for p in again.problems] == ["parse_error"]
    assert served_ids(again) == ["boundary:b.no_push", "fact:f.one"]
    assert verdict(again) == "block"


GUARDED = RULE.replace(
    "module a\n", 'module a\n\nfact a.note {\n  claim: "Pushes are reviewed."\n}\n'
)


def test_the_last_good_version_served_is_the_one_kept_not_an_older_one(
    workspace: Path, tmp_path: Path
) -> None:
    # The snapshot file is rewritten at most every few minutes (the default here): a
    # good edit saved in between, then a break, must still serve the edited version.
    (workspace / "a.mem").write_text('module a\n\nfact a.old {\n  claim: "No rule yet."\n}\n')
    state = tmp_path / "state"
    cache, first = saved_start(workspace, state)
    (workspace / "a.mem").write_text(GUARDED)
    edited = build_snapshot("w", str(workspace), first, cache=cache, trusted=True)
    persist(edited, cache)  # its entry is saved; the snapshot file waits
    assert verdict(edited) == "block"
    (workspace / "a.mem").write_text(BROKEN)
    broken = build_snapshot("w", str(workspace), edited, cache=cache, trusted=True)
    persist(broken, cache)  # a file that broke: the snapshot file is written at once
    again = build_snapshot("w", str(workspace), None, cache=ParseCache(state))
    assert served_ids(again) == served_ids(edited)
    assert verdict(again) == "block"


def test_an_older_version_is_never_served_in_place_of_a_broken_file(
    workspace: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    cache, first = saved_start(workspace, state)
    # The file holding the rule is deleted (saved: its entry goes; the snapshot file,
    # written moments ago, still holds it), then comes back as bytes that never loaded.
    (workspace / "a.mem").unlink()
    now = SavePolicy(vanish_grace_s=0, settle_s=0)  # no editor's save to wait for
    gone = build_snapshot("w", str(workspace), first, cache=cache, policy=now)
    assert served_ids(gone) == ["fact:f.one"]
    persist(gone, cache)
    (workspace / "a.mem").write_text(BROKEN)
    again = build_snapshot("w", str(workspace), None, cache=ParseCache(state))
    assert [p.kind for p in again.problems] == ["parse_error"]
    assert served_ids(again) == ["fact:f.one"]  # the deleted rule does not come back
    assert verdict(again) == "allow"


def _unreadable(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """`target` there but refused to the daemon, as a mode without read permission
    refuses it (permissions cannot refuse root, the tests' usual user)."""
    import os

    real_open = os.open

    def denied(path: str, flags: int, *args: object) -> int:
        if os.fspath(path) == str(target):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", denied)


def test_a_file_that_becomes_unreadable_keeps_its_rules_while_running_and_after_a_restart(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file there but unreadable is no deleted file: its MUST rule keeps applying, with
    # the problem reported, by a walk, by a reload of the changed file, and across a start.
    monkeypatch.setattr(cache_module, "SNAPSHOT_INTERVAL_S", 0.0)
    state = tmp_path / "state"
    cache, first = saved_start(workspace, state)
    target = workspace / "a.mem"
    target.chmod(0o000)  # a new ctime: the file is read again
    with monkeypatch.context() as denied:
        _unreadable(denied, target)
        walked = build_snapshot("w", str(workspace), first, cache=cache, trusted=True)
        changed = build_snapshot(
            "w", str(workspace), first, cache=cache, trusted=True, changed=[str(target)]
        )
        for running in (walked, changed):
            assert [(p.kind, p.message) for p in running.problems] == [
                ("read_error", "cannot read: Permission denied")
            ]
            assert served_ids(running) == served_ids(first) and verdict(running) == "block"
        persist(walked, cache)
        again = build_snapshot("w", str(workspace), None, cache=ParseCache(state))
        assert [p.kind for p in again.problems] == ["read_error"]
        assert served_ids(again) == served_ids(first) and verdict(again) == "block"
    # Readable again: served as it is, with no problem (the change of mode is seen by
    # its ctime, which the kernel keeps in ticks of a few milliseconds)
    unreadable_since = target.stat().st_ctime_ns
    while target.stat().st_ctime_ns == unreadable_since:
        target.chmod(0o644)
    back = build_snapshot("w", str(workspace), walked, cache=cache, trusted=True)
    assert back.problems == [] and verdict(back) == "block"


def _unlistable(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """`directory` there but not to be listed, as a mode without read or execute
    permission refuses it to the daemon (not to root, the tests' usual user)."""
    import os

    real_scandir = os.scandir

    def denied(path: object = ".") -> object:
        if os.fspath(path) == str(directory):  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", str(directory))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", denied)


def test_sources_under_a_directory_that_cannot_be_listed_keep_their_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rule lives in a subdirectory that stops being listable: its files are there,
    # not deleted, so the MUST rule keeps applying, with the problem reported, while
    # running and across a start.
    monkeypatch.setattr(cache_module, "SNAPSHOT_INTERVAL_S", 0.0)
    root = tmp_path / "w"
    (root / "rules").mkdir(parents=True)
    (root / "rules" / "a.mem").write_text(RULE)
    (root / "b.mem").write_text(FACT)
    state = tmp_path / "state"
    cache, first = saved_start(root, state)
    assert verdict(first) == "block"
    with monkeypatch.context() as denied:
        _unlistable(denied, root / "rules")
        running = build_snapshot("w", str(root), first, cache=cache, trusted=True)
        assert [(p.kind, p.message) for p in running.problems] == [
            ("read_error", "cannot read: its directory cannot be listed")
        ]
        assert served_ids(running) == served_ids(first) and verdict(running) == "block"
        persist(running, cache)
        again = build_snapshot("w", str(root), None, cache=ParseCache(state))
        assert [p.kind for p in again.problems] == ["read_error"]
        assert served_ids(again) == served_ids(first) and verdict(again) == "block"
    listed = build_snapshot("w", str(root), running, cache=cache, trusted=True)
    assert listed.problems == [] and verdict(listed) == "block"
