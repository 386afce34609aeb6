"""The parse cache lets go of workspaces it no longer serves: a removed workspace's
folder is deleted, a late save writes nothing back, and at start folders no served
workspace uses are deleted once unused for long."""

from __future__ import annotations

import os
import time
from pathlib import Path

from memhubd.runtime.cache import UNUSED_FOR_S, ParseCache, _workspace_folder
from memhubd.runtime.snapshot import build_snapshot, persist

FACT = 'fact notes.kept {\n  claim: "Kept."\n  evidence { source: "t" quote: "q" }\n}\n'


def workspace(parent: Path, name: str) -> str:
    root = parent / name
    root.mkdir()
    (root / "a.mem").write_text(FACT, encoding="utf-8")
    return str(root)


def served(cache: ParseCache, root: str) -> Path:
    """Serve `root` once (its first build reads the cache) and save it; its folder."""
    persist(build_snapshot("w", root, None, cache=cache), cache)
    return _workspace_folder(cache.directory, root)


def age(folder: Path, seconds: float) -> None:
    then = time.time() - seconds
    for path in (folder, folder / "root"):
        if path.exists():
            os.utime(path, (then, then))


def test_a_saved_folder_names_its_workspace_root(tmp_path: Path) -> None:
    cache = ParseCache(tmp_path / "cache")
    root = workspace(tmp_path, "w")
    folder = served(cache, root)
    assert (folder / "root").read_text(encoding="utf-8") == os.path.realpath(root)


def test_forget_deletes_the_folder_and_a_later_save_writes_nothing(tmp_path: Path) -> None:
    # Given a workspace whose parse cache was saved
    cache = ParseCache(tmp_path / "cache")
    root = workspace(tmp_path, "w")
    snapshot = build_snapshot("w", root, None, cache=cache)
    persist(snapshot, cache)
    folder = _workspace_folder(cache.directory, root)
    assert (folder / "snapshot").is_file()
    # When it is forgotten (removed), and a save that was under way comes after
    cache.forget(root)
    persist(snapshot, cache)
    # Then its folder is gone for good
    assert not folder.exists()
    # And once it is served again, it is saved again
    assert served(cache, root) == folder and (folder / "snapshot").is_file()


def test_sweep_deletes_old_folders_of_workspaces_not_served(tmp_path: Path) -> None:
    # Given four saved workspaces: served and old, served and recent, not served and
    # recent, not served and unused for longer than the limit
    cache = ParseCache(tmp_path / "cache")
    roots = {name: workspace(tmp_path, name) for name in ("old", "new", "idle", "gone")}
    folders = {name: served(cache, root) for name, root in roots.items()}
    for name in ("old", "gone"):
        age(folders[name], UNUSED_FOR_S + 3600)
    # And a folder of an older daemon, which names no root
    legacy = cache.directory / ("ab" * 12)
    legacy.mkdir()
    (legacy / "snapshot").write_bytes(b"x")
    age(legacy, UNUSED_FOR_S + 3600)
    # When a new start serves only the first two
    restarted = ParseCache(tmp_path / "cache")
    deleted = restarted.sweep([roots["old"], roots["new"]])
    # Then the old folders no served workspace uses are deleted, and only those
    assert sorted(deleted) == sorted([os.path.realpath(roots["gone"]), ""])
    assert not folders["gone"].exists() and not legacy.exists()
    assert all(folders[name].is_dir() for name in ("old", "new", "idle"))
    assert (restarted.directory / "key").is_file()


def test_a_start_that_serves_a_folder_marks_it_used(tmp_path: Path) -> None:
    # Given a workspace whose folder was last written long ago
    cache = ParseCache(tmp_path / "cache")
    root = workspace(tmp_path, "w")
    folder = served(cache, root)
    age(folder, UNUSED_FOR_S + 3600)
    # When a start builds it from the cache, then it stops being served
    restarted = ParseCache(tmp_path / "cache")
    build_snapshot("w", root, None, cache=restarted)
    # Then a later sweep keeps it: it was used now
    assert ParseCache(tmp_path / "cache").sweep([]) == []
    assert folder.is_dir()
