"""A first build's files parsed in worker processes: the snapshot serves what a build
in one thread serves (declarations, positions, answers, lint, problems), holds it in the
restored form, and leaves whatever a worker could not parse to the build."""

from __future__ import annotations

import json
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from memhubd.model.declaration import RestoredDeclaration
from memhubd.query import build_evidence_pack
from memhubd.runtime import parse_pool
from memhubd.runtime.cache import ParseCache
from memhubd.runtime.snapshot import Snapshot, build_snapshot, persist

FILES = 24


def make_workspace(root: Path) -> Path:
    root.mkdir()
    (root / "memdsl.json").write_text(
        json.dumps({"schema_version": "memdsl.workspace.v1", "schemas": []})
    )
    for n in range(FILES):
        folder = root / f"team{n % 3}"
        folder.mkdir(exist_ok=True)
        (folder / f"notes{n}.mem").write_text(
            f"module team{n % 3}.notes\n"
            f'fact deploy.day{n} {{ claim: "Deploy {n} on tuesdays." subject: User '
            f'evidence {{ source: "t" quote: "q" }} tags: ["ops", "n{n}"] }}\n'
            # An unusual file the fast parser leaves to the precise one (escaped newline).
            + ('rule odd { claim: "two\\\nlines" }\n' if n == 5 else "")
            + f'boundary no.force{n} {{ claim: "Never force push main." scope: global '
            'guard { when_any: ["push"] deny_any: ["--force"] } '
            f'evidence {{ source: "t" quote: "q" }} supersedes: deploy.day{n} }}\n'
        )
    (root / "team0" / "broken.mem").write_text('fact broken { claim: "unterminated }\n')
    (root / "team1" / "empty.mem").write_text("")
    return root


def answers(snapshot: Snapshot) -> dict[str, object]:
    ws = snapshot.workspace
    return {
        "files": [(f.path, f.digest, f.stat) for f in snapshot.files],
        "declarations": [
            (d.file, d.id, d.line, d.column, d.module, d.fields, d.positions)
            for d in ws.declarations
        ],
        "query": build_evidence_pack(ws, "deploy push tuesdays").as_dict(),
        "lint": [d.as_dict() for d in snapshot.diagnostics()],
        "problems": [p.as_dict() for p in snapshot.problems],
    }


@pytest.fixture
def pooled_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Pool any first build of more than a few files, on two workers whatever the machine;
    returns the number of files each pooled build took from its workers."""
    used: list[int] = []
    close = parse_pool.PooledParses.close

    def closing(self: parse_pool.PooledParses) -> None:
        used.append(self.used)
        close(self)

    monkeypatch.setattr(parse_pool, "MIN_FILES", 4)
    monkeypatch.setattr(parse_pool, "CHUNK_FILES", 5)
    monkeypatch.setattr(parse_pool, "worker_count", lambda: 2)
    monkeypatch.setattr(parse_pool.PooledParses, "close", closing)
    return used


def serial_build(root: Path, monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> Snapshot:
    with monkeypatch.context() as patch:
        patch.setattr(parse_pool, "MIN_FILES", 10**9)
        return build_snapshot("w", str(root), None, **kwargs)  # type: ignore[arg-type]


def test_a_pooled_first_build_serves_what_a_serial_one_does(
    tmp_path: Path, pooled_builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_workspace(tmp_path / "ws")
    expected = answers(serial_build(root, monkeypatch))

    pooled = build_snapshot("w", str(root), None)

    assert pooled_builds == [FILES]  # the broken and the empty file: parsed by the build
    assert answers(pooled) == expected
    assert all(isinstance(d, RestoredDeclaration) for d in pooled.workspace.declarations)
    assert pooled.reparsed == FILES + 2


def test_files_the_parse_cache_holds_are_restored_not_sent_to_the_workers(
    tmp_path: Path, pooled_builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_workspace(tmp_path / "ws")
    state = tmp_path / "state"
    persist(serial_build(root, monkeypatch), ParseCache(state))
    for n in range(0, FILES, 2):  # half the files changed while the daemon was down
        path = root / f"team{n % 3}" / f"notes{n}.mem"
        path.write_text(path.read_text() + f'fact late{n} {{ claim: "Added later." }}\n')
    expected = answers(serial_build(root, monkeypatch))

    restarted = build_snapshot("w", str(root), None, cache=ParseCache(state))

    assert pooled_builds == [FILES // 2]
    assert answers(restarted) == expected


def test_without_the_snapshot_file_the_workers_leave_saved_entries_to_the_build(
    tmp_path: Path, pooled_builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_workspace(tmp_path / "ws")
    state = tmp_path / "state"
    persist(serial_build(root, monkeypatch), ParseCache(state))
    for file in state.glob("*/snapshot"):
        file.unlink()  # only the per-file entries are left
    for n in range(0, FILES, 3):
        path = root / f"team{n % 3}" / f"notes{n}.mem"
        path.write_text(path.read_text() + f'fact late{n} {{ claim: "Added later." }}\n')
    expected = answers(serial_build(root, monkeypatch))

    restarted = build_snapshot("w", str(root), None, cache=ParseCache(state))

    assert pooled_builds == [FILES // 3]  # the changed files; the others from their entries
    assert answers(restarted) == expected


def test_a_file_changed_after_its_worker_read_it_is_parsed_by_the_build(
    tmp_path: Path, pooled_builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_workspace(tmp_path / "ws")
    changed = str(root / "team2" / "notes2.mem")
    answer = parse_pool.PooledParses._answer

    def stale(self: parse_pool.PooledParses, path: str) -> tuple[str, bytes | None] | None:
        found = answer(self, path)
        return ("0" * 32, found[1]) if found is not None and path == changed else found

    monkeypatch.setattr(parse_pool.PooledParses, "_answer", stale)
    expected = answers(serial_build(root, monkeypatch))

    pooled = build_snapshot("w", str(root), None)

    assert pooled_builds == [FILES - 1]
    assert answers(pooled) == expected


def test_when_the_workers_fail_the_build_parses_the_rest_itself(
    tmp_path: Path, pooled_builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_workspace(tmp_path / "ws")
    expected = answers(serial_build(root, monkeypatch))
    submit = parse_pool.ProcessPoolExecutor.submit
    calls: list[object] = []

    def failing(self: object, *args: object) -> object:
        calls.append(args)
        if len(calls) > 2:  # as a pool whose worker was killed
            raise BrokenProcessPool("a worker died")
        return submit(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(parse_pool.ProcessPoolExecutor, "submit", failing)

    pooled = build_snapshot("w", str(root), None)

    assert pooled_builds and pooled_builds[0] < FILES  # the first chunks, no more
    assert answers(pooled) == expected


def test_a_later_build_or_a_small_workspace_parses_in_its_own_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_workspace(tmp_path / "ws")
    started: list[object] = []
    monkeypatch.setattr(parse_pool.PooledParses, "__init__", lambda *a: started.append(a))

    first = build_snapshot("w", str(root), None)  # FILES + 2 < MIN_FILES
    (root / "team0" / "notes0.mem").write_text('fact only { claim: "One." }\n')
    build_snapshot("w", str(root), first)

    assert started == []
