"""Archiving a removed workspace's state: its files move under `removed/`, each at its
place, only once closed; a failure moves nothing for good; a retired recall store is
not opened again until its name is admitted."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memhubd.recall.shelf import RecallShelf
from memhubd.recall.store.base import UnusableStore
from memhubd.runtime import archive as archive_module
from memhubd.runtime.archive import StateNotArchived, archive


def state_of(state: Path, name: str) -> list[Path]:
    files = [state / "recall" / f"{name}.db", state / "cowork" / f"{name}.sqlite"]
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(f"what {name}'s agents said\n")
    return files


def test_files_move_under_removed_at_their_places(tmp_path: Path) -> None:
    files = state_of(tmp_path, "team")
    folder = archive(tmp_path, "team", lambda: [f for f in files if f.exists()])
    assert folder is not None and folder.parent == tmp_path / "removed"
    assert folder.name.startswith("team-") and folder.name.endswith("Z")
    assert (folder / "recall" / "team.db").read_text() == "what team's agents said\n"
    assert (folder / "cowork" / "team.sqlite").is_file()
    assert not any(f.exists() for f in files)
    # A second removal of the name within the same second gets a folder of its own
    files = state_of(tmp_path, "team")
    again = archive(tmp_path, "team", lambda: [f for f in files if f.exists()])
    assert again is not None and again != folder and (again / "recall" / "team.db").is_file()


def test_a_wal_file_its_last_connection_deletes_while_waited_for_is_not_missed(
    tmp_path: Path,
) -> None:
    # Given a store whose -wal file is listed while a connection still holds the store:
    # closing, SQLite checkpoints and deletes the -wal
    files = state_of(tmp_path, "team")
    wal = tmp_path / "recall" / "team.db-wal"
    wal.write_text("pages")
    held = open(files[0], "rb")  # noqa: SIM115 - closed by the timer below

    def close_and_checkpoint() -> None:
        time.sleep(0.1)
        held.close()
        wal.unlink()

    closer = threading.Thread(target=close_and_checkpoint)
    closer.start()

    def kept() -> list[Path]:
        return [f for f in (*files, wal) if f.exists()]

    # When the state is archived: then what is there once closed is moved, no failure
    folder = archive(tmp_path, "team", kept)
    closer.join()
    assert folder is not None and (folder / "recall" / "team.db").is_file()
    assert not (folder / "recall" / "team.db-wal").exists() and not files[0].exists()


def test_nothing_kept_makes_no_folder(tmp_path: Path) -> None:
    assert archive(tmp_path, "team", list) is None
    assert not (tmp_path / "removed").exists()


def test_a_file_still_open_is_not_moved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive_module, "CLOSE_WAIT_S", 0.1)
    files = state_of(tmp_path, "team")
    with open(files[0], "rb"), pytest.raises(StateNotArchived, match="team"):
        archive(tmp_path, "team", lambda: files)
    assert all(f.is_file() for f in files)


def test_a_failed_move_moves_back_what_it_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = state_of(tmp_path, "team")
    real_rename = archive_module.os.rename
    calls = []

    def rename(source: Path, target: Path) -> None:
        calls.append(source)
        if len(calls) == 2:
            raise PermissionError(13, "Permission denied")
        real_rename(source, target)

    monkeypatch.setattr(archive_module.os, "rename", rename)
    with pytest.raises(StateNotArchived, match="permission denied"):
        archive(tmp_path, "team", lambda: files)
    assert all(f.is_file() for f in files)
    assert list((tmp_path / "removed").iterdir()) == []


def test_a_retired_store_is_not_opened_until_its_name_is_admitted(tmp_path: Path) -> None:
    shelf = RecallShelf(tmp_path / "recall")
    shelf.store("team")
    assert [p.name for p in shelf.files_of("team")][0] == "team.db"
    shelf.retire("team")
    with pytest.raises(UnusableStore, match="removed"):
        shelf.store("team")
    shelf.admit("team")
    assert shelf.store("team") is not None
    shelf.close()
