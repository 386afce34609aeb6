"""The persisted parse cache: a restart restores files it saved, re-parses the ones that
changed while it was down, and never trusts an entry it did not write whole."""

from __future__ import annotations

import json
import marshal
import shutil
from pathlib import Path

import pytest

from memhubd.index import persist as persist_module
from memhubd.model import Declaration
from memhubd.model.declaration import RestoredDeclaration
from memhubd.query import build_evidence_pack
from memhubd.runtime import cache as cache_module
from memhubd.runtime import sources as sources_module
from memhubd.runtime.cache import (
    SNAPSHOT_FORMAT,
    ParseCache,
    RestoredPostingTable,
    read_snapshot_payload,
    snapshot_documents,
)
from memhubd.runtime.snapshot import Snapshot, build_snapshot, persist

SOURCES = {
    "a.mem": (
        'fact deploy.day { claim: "Deploy on tuesdays." subject: User '
        'evidence { source: "t" quote: "q" } }\n'
        'entity User { aliases: ["me", "myself"] }\n'
    ),
    "sub/b.mem": (
        "module team.rules\n"
        'boundary no.force { claim: "Never force push main." scope: global '
        'guard { when_any: ["push"] deny_any: ["--force"] } '
        'evidence { source: "t" quote: "q" } supersedes: deploy.day }\n'
    ),
}


def make_workspace(root: Path) -> Path:
    root.mkdir()
    (root / "memdsl.json").write_text(
        json.dumps({"schema_version": "memdsl.workspace.v1", "schemas": []})
    )
    for path, text in SOURCES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def answers(snapshot: Snapshot) -> dict[str, object]:
    ws = snapshot.workspace
    return {
        "declarations": [(d.file, d.id, d.line, d.column, d.module) for d in ws.declarations],
        "query": build_evidence_pack(ws, "deploy push me").as_dict(),
        "lint": [d.as_dict() for d in snapshot.diagnostics()],
    }


def entries(state: Path) -> list[Path]:
    return sorted(state.glob("*/*.entry"))


def snapshot_files(state: Path) -> list[Path]:
    return sorted(state.glob("*/snapshot"))


def sealed_snapshot(state: Path) -> tuple[ParseCache, Path, memoryview]:
    """The cache of `state`, its one snapshot file, and that file's payload (its seal checked)."""
    cache = ParseCache(state)
    (file,) = snapshot_files(state)
    payload = cache._open(file.read_bytes(), b"MHSS", SNAPSHOT_FORMAT)  # noqa: SLF001
    assert payload is not None
    return cache, file, payload


def without_consolidated_snapshot(state: Path) -> None:
    """Only the per-file entries are left: what a start falls back to."""
    for file in snapshot_files(state):
        file.unlink()


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, Path, Snapshot]:
    root = make_workspace(tmp_path / "ws")
    state = tmp_path / "state"
    first = build_snapshot("w", str(root), None, cache=ParseCache(state))
    assert persist(first, ParseCache(state)) == 2
    return root, state, first


def test_a_restart_restores_every_file_and_answers_the_same(
    saved: tuple[Path, Path, Snapshot],
) -> None:
    root, state, first = saved
    cache = ParseCache(state)

    again = build_snapshot("w", str(root), None, cache=cache)

    assert (cache.hits, cache.misses, cache.refused) == (2, 0, 0)
    assert answers(again) == answers(first)


def test_a_file_changed_while_down_is_parsed_again(saved: tuple[Path, Path, Snapshot]) -> None:
    root, state, _first = saved
    (root / "a.mem").write_text(SOURCES["a.mem"].replace("tuesdays", "fridays"))
    cache = ParseCache(state)

    again = build_snapshot("w", str(root), None, cache=cache)

    assert (cache.hits, cache.misses) == (1, 1)
    assert "fridays" in again.workspace.by_id("deploy.day").claim_text  # type: ignore[union-attr]
    assert answers(again) == answers(build_snapshot("w", str(root), None))
    # Saving again prunes the entry of the old bytes.
    assert persist(again, cache) == 1
    assert len(entries(state)) == 2


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # one flipped bit in the payload
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:4] + (99).to_bytes(2, "big") + data[6:],  # another format version
        lambda data: b"",
    ],
)
def test_a_damaged_entry_is_ignored_and_the_file_parsed(
    saved: tuple[Path, Path, Snapshot], damage, caplog: pytest.LogCaptureFixture
) -> None:
    root, state, first = saved
    without_consolidated_snapshot(state)
    for entry in entries(state):
        entry.write_bytes(damage(entry.read_bytes()))
    cache = ParseCache(state)

    again = build_snapshot("w", str(root), None, cache=cache)

    assert cache.hits == 0
    assert cache.refused == 2
    assert answers(again) == answers(first)
    # The next save writes them again, and the start after it restores both
    assert persist(again, cache) == 2
    without_consolidated_snapshot(state)
    later = ParseCache(state)
    assert answers(build_snapshot("w", str(root), None, cache=later)) == answers(first)
    assert (later.hits, later.refused) == (2, 0)


def test_another_state_dirs_cache_is_not_trusted(
    saved: tuple[Path, Path, Snapshot], tmp_path: Path
) -> None:
    root, state, first = saved
    without_consolidated_snapshot(state)
    # Another daemon (its own secret) saved entries for the same files ...
    other = tmp_path / "other"
    build = build_snapshot("w", str(root), None)
    persist(build, ParseCache(other))
    # ... and they are copied over ours, names and all.
    for entry in sorted(other.glob("*/*.entry")):
        shutil.copy(entry, state / entry.parent.name / entry.name)
    cache = ParseCache(state)

    again = build_snapshot("w", str(root), None, cache=cache)

    assert (cache.hits, cache.refused) == (0, 2)
    assert answers(again) == answers(first)


def test_an_entry_is_never_served_for_another_file(saved: tuple[Path, Path, Snapshot]) -> None:
    root, state, _first = saved
    without_consolidated_snapshot(state)
    # Swap the two entries' names: both are sealed by us, but for other paths.
    first_entry, second_entry = entries(state)
    a, b = first_entry.read_bytes(), second_entry.read_bytes()
    first_entry.write_bytes(b)
    second_entry.write_bytes(a)
    cache = ParseCache(state)

    again = build_snapshot("w", str(root), None, cache=cache)

    assert (cache.hits, cache.refused) == (0, 2)
    assert answers(again) == answers(build_snapshot("w", str(root), None))


def test_the_cache_directory_and_its_secret_are_private(saved: tuple[Path, Path, Snapshot]) -> None:
    _root, state, _first = saved
    assert state.stat().st_mode & 0o777 == 0o700
    assert (state / "key").stat().st_mode & 0o777 == 0o600
    assert all(entry.stat().st_mode & 0o077 == 0 for entry in entries(state))


def test_a_start_serves_unchanged_files_from_the_snapshot_without_reading_them(
    saved: tuple[Path, Path, Snapshot], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, state, first = saved
    assert len(snapshot_files(state)) == 1
    read = []
    real_read = sources_module.read_confined
    monkeypatch.setattr(
        sources_module, "read_confined", lambda path, *a: read.append(path) or real_read(path, *a)
    )
    # Given one file rewritten while the daemon was down (another size, so another stat)
    (root / "a.mem").write_text(SOURCES["a.mem"].replace("tuesdays", "on fridays"))
    cache = ParseCache(state)

    again = build_snapshot("w", str(root), None, cache=cache)

    # Then only that file is read (and parsed: its entry holds the old bytes)
    assert [p for p in read if p.endswith(".mem")] == [str(root / "a.mem")]
    assert (cache.hits, cache.misses) == (1, 1)
    assert answers(again) == answers(build_snapshot("w", str(root), None))
    assert [f.text for f in again.files] == [
        f.text for f in build_snapshot("w", str(root), None).files
    ]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # one flipped bit in the payload
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:4] + (99).to_bytes(2, "big") + data[6:],  # another format version
        lambda data: b"",
    ],
)
def test_a_damaged_snapshot_is_ignored_with_a_log_line(
    saved: tuple[Path, Path, Snapshot],
    damage,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    root, state, first = saved
    for file in snapshot_files(state):
        file.write_bytes(damage(file.read_bytes()))
    cache = ParseCache(state)

    again = build_snapshot("w", str(root), None, cache=cache)

    # The entries still serve (each file read and its bytes checked), nothing is lost
    assert cache.refused == 1
    assert cache.hits == 2
    printed = capsys.readouterr()  # where the line goes depends on how logging is set up
    assert "parse cache snapshot refused" in printed.out + printed.err + caplog.text
    assert answers(again) == answers(first)


def test_another_state_dirs_snapshot_is_not_trusted(
    saved: tuple[Path, Path, Snapshot], tmp_path: Path
) -> None:
    root, state, first = saved
    # Another daemon (its own secret) saved a snapshot of the same workspace, which
    # claims other bytes for a.mem under a.mem's current stat ...
    other = tmp_path / "other"
    build = build_snapshot("w", str(root), None)
    persist(build, ParseCache(other))
    for file in sorted(other.glob("*/snapshot")):
        shutil.copy(file, state / file.parent.name / file.name)
    cache = ParseCache(state)

    again = build_snapshot("w", str(root), None, cache=cache)

    assert cache.refused == 1
    assert answers(again) == answers(first)


def test_a_snapshot_of_another_workspace_is_not_used(
    saved: tuple[Path, Path, Snapshot], tmp_path: Path
) -> None:
    root, state, _first = saved
    # A copy of the workspace elsewhere, with the first workspace's snapshot under its name
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    (copy / "a.mem").write_text(SOURCES["a.mem"].replace("tuesdays", "fridays"))
    ours = ParseCache(state)._workspace_dir(str(copy))  # noqa: SLF001
    ours.mkdir()
    shutil.copy(snapshot_files(state)[0], ours / "snapshot")
    cache = ParseCache(state)

    again = build_snapshot("w", str(copy), None, cache=cache)

    assert cache.refused == 1
    assert "fridays" in again.workspace.by_id("deploy.day").claim_text  # type: ignore[union-attr]


def _decoded_fields(declarations: list[object]) -> int:
    """How many of `declarations` hold their fields decoded (an unset slot otherwise)."""
    slot = Declaration.__dict__["fields"]
    count = 0
    for decl in declarations:
        try:
            slot.__get__(decl)
        except AttributeError:
            continue
        count += 1
    return count


def test_a_restart_decodes_each_declarations_fields_only_when_read(
    saved: tuple[Path, Path, Snapshot],
) -> None:
    root, state, first = saved

    again = build_snapshot("w", str(root), None, cache=ParseCache(state))

    # Given a start from the snapshot file, no declaration's fields were decoded
    restored = again.workspace.declarations
    assert all(isinstance(d, RestoredDeclaration) for d in restored)
    assert _decoded_fields(restored) == 0
    # When they are read, they are the parsed ones, shared with the parsed declaration
    parsed = build_snapshot("w", str(root), None).workspace.declarations
    assert [d.fields for d in restored] == [d.fields for d in parsed]
    assert all(d.fields is d._positions.fields for d in restored)  # noqa: SLF001
    assert restored == parsed
    assert answers(again) == answers(first)


@pytest.mark.parametrize("read_first", [False, True])
def test_a_restored_workspace_is_saved_again_as_it_was(
    saved: tuple[Path, Path, Snapshot], tmp_path: Path, read_first: bool
) -> None:
    root, state, first = saved
    restored = build_snapshot("w", str(root), None, cache=ParseCache(state))
    if read_first:  # every declaration's fields decoded (their saved form then dropped)
        answers(restored)
        assert _decoded_fields(restored.workspace.declarations) == 3
    # Saving restored files into another cache, then restoring
    other = tmp_path / "other"
    persist(restored, ParseCache(other))

    again = build_snapshot("w", str(root), None, cache=ParseCache(other))

    assert answers(again) == answers(first)


def test_a_snapshot_of_an_older_format_is_ignored_with_a_log_line(
    saved: tuple[Path, Path, Snapshot],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    root, state, first = saved
    # Given a snapshot file sealed by this very cache, but in the format before
    # (declarations' fields decoded with the rest of the file)
    cache = ParseCache(state)
    (file,) = snapshot_files(state)
    old = b"".join(
        cache._seal(  # noqa: SLF001
            marshal.dumps((str(root.resolve()), "types", ())), b"MHSS", SNAPSHOT_FORMAT - 1
        )
    )
    file.write_bytes(old)

    again = build_snapshot("w", str(root), None, cache=cache)

    printed = capsys.readouterr()
    assert "parse cache snapshot refused (another format version)" in (
        printed.out + printed.err + caplog.text
    )
    assert cache.refused == 1
    assert answers(again) == answers(first)


def _compositions(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records each `WorkspaceIndex` composed from segments: whether from a previous one."""
    from memhubd.index.workspace import WorkspaceIndex

    composed: list[bool] = []
    compose = WorkspaceIndex.__init__

    def counted(self: WorkspaceIndex, *args: object, previous: object = None, **kw: object) -> None:
        composed.append(previous is not None)
        compose(self, *args, previous=previous, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(WorkspaceIndex, "__init__", counted)
    return composed


def test_a_start_restores_the_saved_index_instead_of_composing_it(
    saved: tuple[Path, Path, Snapshot], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, state, first = saved
    composed = _compositions(monkeypatch)

    again = build_snapshot("w", str(root), None, cache=ParseCache(state))

    assert composed == []
    assert answers(again) == answers(first)


def test_a_file_changed_while_down_updates_the_saved_index(
    saved: tuple[Path, Path, Snapshot], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, state, _first = saved
    # Given a file edited and another added while the daemon was down
    with (root / "a.mem").open("a", encoding="utf-8") as handle:
        handle.write('fact deploy.night { claim: "Never deploy at night, me." }\n')
    (root / "sub" / "c.mem").write_text('fact c.one { claim: "Push on mondays." }\n')
    composed = _compositions(monkeypatch)

    # When it starts again
    again = build_snapshot("w", str(root), None, cache=ParseCache(state))

    # Then the saved index is updated from, not composed from nothing
    assert composed == [True]
    monkeypatch.undo()
    assert answers(again) == answers(build_snapshot("w", str(root), None))


def test_a_saved_index_that_does_not_fit_is_ignored_with_a_log_line(
    saved: tuple[Path, Path, Snapshot],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    root, state, first = saved
    # Given a snapshot file sealed by this cache whose saved index is of another shape
    cache, file, payload = sealed_snapshot(state)
    real, types, files, (paths, data), _views = read_snapshot_payload(payload)
    broken = snapshot_documents(real, types, files, lambda: (paths, (*data[:-1], {})))
    cache._write_sealed(file, broken, b"MHSS", SNAPSHOT_FORMAT)  # noqa: SLF001

    # When a start reads it, the index is composed instead, with a log line
    again = build_snapshot("w", str(root), None, cache=cache)

    printed = capsys.readouterr()
    assert "parse cache snapshot index unusable" in printed.out + printed.err + caplog.text
    assert answers(again) == answers(first)


def test_a_snapshot_written_a_few_files_at_a_time_restores_every_file_and_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a snapshot file written one file's items per document
    monkeypatch.setattr(cache_module, "SNAPSHOT_BATCH", 1)
    root = make_workspace(tmp_path / "ws")
    state = tmp_path / "state"
    first = build_snapshot("w", str(root), None, cache=ParseCache(state))
    persist(first, ParseCache(state))
    _cache, _file, payload = sealed_snapshot(state)
    _real, _types, files, index, _views = read_snapshot_payload(payload)
    assert len(files) == 2 and index is not None
    assert _documents(payload) == 4  # the head, a document per file, the index

    # When a start reads it
    restored: list[object] = []
    restore = persist_module.restore_index

    def restoring(data: object, segments: object) -> object:
        restored.append(restore(data, segments))  # type: ignore[arg-type]
        return restored[-1]

    monkeypatch.setattr(persist_module, "restore_index", restoring)
    cache = ParseCache(state)
    again = build_snapshot("w", str(root), None, cache=cache)

    # Then every file is restored from it, with the saved index, and answers the same
    assert (cache.hits, cache.misses, cache.refused) == (2, 0, 0)
    assert len(restored) == 1
    assert answers(again) == answers(first)


@pytest.mark.parametrize("cut", ["a length", "a document"])
def test_a_sealed_snapshot_whose_documents_do_not_add_up_is_ignored(
    saved: tuple[Path, Path, Snapshot],
    cut: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    root, state, first = saved
    # Given a snapshot file sealed by this cache whose last document is cut short
    cache, file, payload = sealed_snapshot(state)
    whole = bytes(payload)
    short = whole[: len(whole) - 3] if cut == "a document" else whole + b"\x00\x00"
    file.write_bytes(b"".join(cache._seal(short, b"MHSS", SNAPSHOT_FORMAT)))  # noqa: SLF001

    # When a start reads it
    cache = ParseCache(state)
    again = build_snapshot("w", str(root), None, cache=cache)

    # Then it is refused with a log line, and the files come from their entries
    printed = capsys.readouterr()
    assert "parse cache snapshot unusable" in printed.out + printed.err + caplog.text
    assert cache.refused == 1
    assert answers(again) == answers(first)


def _documents(payload: memoryview) -> int:
    count = at = 0
    while at < len(payload):
        at += 8 + int.from_bytes(payload[at : at + 8], "big")
        count += 1
    assert at == len(payload)
    return count


def test_a_restart_makes_each_declaration_only_when_read_and_once(
    saved: tuple[Path, Path, Snapshot],
) -> None:
    from memhubd.index.workspace import index_for

    root, state, first = saved
    # Given a start from the snapshot file
    again = build_snapshot("w", str(root), None, cache=ParseCache(state))
    files = [f.typed.file for f in again.files]

    # Then no declaration was made: the index is adopted by comparing the files' runs
    assert sum(len(f._made) for f in files) == 0  # noqa: SLF001

    # And reading them makes each once: every reader holds the same objects
    ws = again.workspace
    index = index_for(ws)
    assert [index.declarations[slot] for slot in index.space.members(index.pool)] == [
        d for d in ws.declarations if index.has_bit(index.pool, _slot_of(index, d))
    ]
    made = [d for f in again.files for d in f.typed]
    assert all(a is b for a, b in zip(ws.declarations, made, strict=True))
    assert all(f.columns is None for f in files)  # all made: the saved form dropped
    assert answers(again) == answers(first)


def _slot_of(index: object, declaration: object) -> int:
    return next(
        slot
        for slot in range(index.space.size)  # type: ignore[attr-defined]
        if index.declarations[slot] is declaration  # type: ignore[attr-defined]
    )


def test_a_start_decodes_a_files_posting_keys_only_when_a_query_uses_them(
    saved: tuple[Path, Path, Snapshot],
) -> None:
    root, state, first = saved

    again = build_snapshot("w", str(root), None, cache=ParseCache(state))

    # Given a start from the snapshot file, no posting table's keys were decoded
    tables = [
        getattr(f.segment, name)
        for f in again.files
        for name in ("terms", "subjects", "constraint_scopes")
    ]
    assert all(isinstance(t, RestoredPostingTable) for t in tables)
    assert all(t._keys is None and t._index is None for t in tables)  # noqa: SLF001
    # When read, they are the parsed tables' keys, rows and key -> row dicts, the dict
    # made only when it is read itself (a view's cut reads the keys alone)
    parsed = build_snapshot("w", str(root), None)
    for restored, built in zip(again.files, parsed.files, strict=True):
        for name in ("terms", "subjects", "constraint_scopes"):
            mine, theirs = getattr(restored.segment, name), getattr(built.segment, name)
            assert (mine.keys, mine.rows, mine.width) == (theirs.keys, theirs.rows, theirs.width)
            assert mine._index is None  # noqa: SLF001
            assert mine.index == theirs.index
    assert answers(again) == answers(first)


def test_a_restored_index_makes_its_key_dicts_when_first_read(
    saved: tuple[Path, Path, Snapshot],
) -> None:
    from memhubd.index.workspace import cached_index

    root, state, first = saved

    again = build_snapshot("w", str(root), None, cache=ParseCache(state))

    # Given a start that restored the saved index, its id and name dicts are not made
    index = cached_index(again.workspace)
    assert index is not None
    assert index.ids._where._made is None  # noqa: SLF001
    assert index._names._where._made is None  # noqa: SLF001
    # When read, they hold what a composed index holds, and the answers are the same
    composed = cached_index(build_snapshot("w", str(root), None).workspace)
    assert composed is not None
    for mine, theirs in ((index.ids, composed.ids), (index._names, composed._names)):  # noqa: SLF001
        assert [(k, len(v)) for k, v in mine._where.items()] == [  # noqa: SLF001
            (k, len(v))
            for k, v in theirs._where.items()  # noqa: SLF001
        ]
    assert answers(again) == answers(first)


def test_saving_a_restored_index_leaves_its_key_dicts_unmade(
    saved: tuple[Path, Path, Snapshot],
) -> None:
    from memhubd.index.workspace import cached_index

    root, state, first = saved
    cache = ParseCache(state)
    again = build_snapshot("w", str(root), None, cache=cache)
    index = cached_index(again.workspace)
    assert index is not None
    maps = [index.ids._where, index._names._where, index._holders["terms"].rare]  # noqa: SLF001

    # When the snapshot is saved again (every map of its index read whole)
    cache._snapshots.clear()  # noqa: SLF001 - due for a write
    persist(again, cache)

    # Then no dict was kept for it: the maps still answer from their saved columns
    assert all(m._made is None for m in maps)  # noqa: SLF001
    # And the file written answers as the first did
    assert answers(build_snapshot("w", str(root), None, cache=ParseCache(state))) == answers(first)


def test_a_snapshot_checked_before_the_start_restores_as_one_read_by_it(
    saved: tuple[Path, Path, Snapshot], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, state, first = saved
    # Given the snapshot file mapped and its seal checked before the start (as `memhubd
    # serve` does while its server's modules import)
    cache_module.prefetch_snapshots(state, [str(root)])
    checked = []
    monkeypatch.setattr(ParseCache, "_open", lambda *a: checked.append(a) or None)
    cache = ParseCache(state)

    # When the start reads it
    again = build_snapshot("w", str(root), None, cache=cache)

    # Then the snapshot serves every file, its seal not checked again, and answers alike
    assert checked == [] and cache.refused == 0 and cache.misses == 0
    assert answers(again) == answers(first)
    # And it is used once: a later read checks the file itself
    assert cache_module._prefetched(snapshot_files(state)[0], b"k" * 32) is None  # noqa: SLF001


@pytest.mark.parametrize("other_key", [False, True])
def test_a_damaged_snapshot_checked_before_the_start_is_refused_as_ever(
    saved: tuple[Path, Path, Snapshot],
    other_key: bool,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    root, state, first = saved
    for file in snapshot_files(state):
        data = file.read_bytes()
        file.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # one flipped bit
    # Given a damaged snapshot checked before the start (or under a key since replaced)
    cache_module.prefetch_snapshots(state, [str(root)])
    if other_key:  # checked under another key than the cache's: checked again
        (file,) = snapshot_files(state)
        early = cache_module._EARLY[file]  # noqa: SLF001
        cache_module._EARLY[file] = (b"x" * 32, *early[1:])  # noqa: SLF001
    cache = ParseCache(state)

    # When the start reads it
    again = build_snapshot("w", str(root), None, cache=cache)

    # Then it is refused with a log line, and the entries serve
    assert cache.refused == 1
    printed = capsys.readouterr()
    assert "parse cache snapshot refused" in printed.out + printed.err + caplog.text
    assert answers(again) == answers(first)


def test_nothing_is_checked_before_the_start_without_a_cache_key(tmp_path: Path) -> None:
    # Given a state dir whose parse cache was never made
    root = make_workspace(tmp_path / "ws")
    state = tmp_path / "state"
    # When the snapshot files are to be checked early
    cache_module.prefetch_snapshots(state, [str(root)])
    # Then nothing is made or looked at
    assert not state.exists()
    assert not [f for f in cache_module._EARLY if state in f.parents]  # noqa: SLF001


def test_a_snapshot_checked_early_that_no_start_reads_is_let_go(
    saved: tuple[Path, Path, Snapshot],
) -> None:
    root, state, first = saved
    # Given a snapshot file mapped and checked before a start that never read it
    cache_module.prefetch_snapshots(state, [str(root)])
    (file,) = snapshot_files(state)
    assert file in cache_module._EARLY  # noqa: SLF001
    # When the start lets go of what it did not read
    cache_module.discard_prefetched()
    # Then nothing is held, and a later start reads the file itself
    assert file not in cache_module._EARLY  # noqa: SLF001
    cache = ParseCache(state)
    again = build_snapshot("w", str(root), None, cache=cache)
    assert cache.refused == 0 and cache.misses == 0
    assert answers(again) == answers(first)


def test_temp_files_of_writers_no_longer_running_are_removed(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from memhubd.runtime.cache import ParseCache, _workspace_folder

    # Given temp files left by a killed writer, by a live one and by this process
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = int(ended.stdout)
    cache_dir = tmp_path / "parse-cache"
    folder = _workspace_folder(cache_dir, str(tmp_path / "ws"))
    folder.mkdir(parents=True)
    names = {
        "dead-snapshot": f".snapshot.{dead}.140000.tmp",
        "live-snapshot": f".snapshot.{os.getppid()}.140000.tmp",
        "own-entry": f".x.entry.{os.getpid()}.140001.tmp",
        "entry": "kept.entry",
    }
    for name in names.values():
        (folder / name).write_bytes(b"half")
    (cache_dir / f".key.{dead}.tmp").write_bytes(b"k")
    # When a cache is opened on the directory and the workspace's folder is used
    cache = ParseCache(cache_dir)
    cache._workspace_dir(str(tmp_path / "ws"))
    # Then only the dead writer's files are gone
    left = set(os.listdir(folder))
    assert names["dead-snapshot"] not in left
    assert {names["live-snapshot"], names["own-entry"], names["entry"]} <= left
    assert not (cache_dir / f".key.{dead}.tmp").exists()
