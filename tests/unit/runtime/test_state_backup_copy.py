"""`memhubd backup` in one process: it follows links as the daemon does (a `recall/` on
another disk), each directory once, notes what went away meanwhile instead of failing,
and makes every directory of the copy private."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

from memhubd.runtime import backup
from memhubd.runtime.backup import back_up


def store(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("CREATE TABLE drawers (content TEXT)")
        connection.execute("INSERT INTO drawers VALUES ('the quay cache warms at start')")
    connection.close()


def test_a_linked_directory_is_copied_and_a_loop_is_walked_once(tmp_path: Path) -> None:
    state, elsewhere = tmp_path / "state", tmp_path / "disk2" / "recall"
    store(elsewhere / "team.db")
    state.mkdir()
    (state / "tokens.json").write_text("{}")
    (state / "recall").symlink_to(elsewhere)
    (elsewhere / "again").symlink_to(elsewhere)  # a loop

    report = back_up(state, tmp_path / "copy")

    with sqlite3.connect(tmp_path / "copy" / "recall" / "team.db") as copy:
        assert copy.execute("SELECT content FROM drawers").fetchall() == [
            ("the quay cache warms at start",)
        ]
    assert ("recall/again/", "a loop") in report.skipped
    assert not (tmp_path / "copy" / "recall").is_symlink()


def test_every_directory_of_the_copy_is_private(tmp_path: Path) -> None:
    state = tmp_path / "state"
    store(state / "recall" / "locks" / "team" / "x.db")

    back_up(state, tmp_path / "copy")

    for part in ("recall", "recall/locks", "recall/locks/team"):
        assert stat.S_IMODE((tmp_path / "copy" / part).stat().st_mode) == 0o700, part


def test_a_file_gone_during_the_backup_is_noted_not_fatal(tmp_path, monkeypatch) -> None:
    state = tmp_path / "state"
    store(state / "recall" / "gone.db")
    store(state / "recall" / "kept.db")
    copy_database = backup._copy_database

    def moved_first(source: Path, target: Path) -> int:
        if source.name == "gone.db":
            source.rename(tmp_path / "moved.db")  # a workspace removed meanwhile
        return copy_database(source, target)

    monkeypatch.setattr(backup, "_copy_database", moved_first)

    report = back_up(state, tmp_path / "copy")

    assert ("recall/gone.db", "gone during the backup") in report.skipped
    assert [c.path for c in report.copied] == ["recall/kept.db"]
    assert not (tmp_path / "copy" / "recall" / "gone.db").exists()


def test_a_copy_made_inside_a_linked_directory_is_not_copied_into_itself(tmp_path) -> None:
    state, disk = tmp_path / "state", tmp_path / "disk" / "recall"
    store(disk / "team.db")
    state.mkdir()
    (state / "recall").symlink_to(disk)

    report = back_up(state, disk / "backup")

    assert ("recall/backup/", "the backup itself") in report.skipped
    assert [c.path for c in report.copied] == ["recall/team.db"]
