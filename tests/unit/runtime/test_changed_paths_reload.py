"""Property: a build told which paths changed serves exactly what a build that walks the
whole workspace serves, whatever the edits (files rewritten, added in old and new
directories, deleted, broken), with the editor-save rules applied the same way.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memhubd.query import build_evidence_pack
from memhubd.runtime.snapshot import SavePolicy, Snapshot, build_snapshot

PATHS = ["a.mem", "m.mem", "sub/c.mem", "sub/k.mem", "sub/z.mem", "new/e.mem", ".#a.mem"]
QUERIES = ["deploy main", "push tier"]
SOURCES = st.one_of(
    st.none(),
    st.just(""),
    st.just("fact broken {{ claim: \n"),
    st.builds(
        lambda name, word: (
            f'fact {name} {{ claim: "{word} main" evidence {{ source: "t" quote: "q" }} }}\n'
        ),
        st.sampled_from(["deploy", "push", "tier"]),
        st.sampled_from(["deploy", "push", "never"]),
    ),
)
EDITS = st.lists(st.lists(st.tuples(st.sampled_from(PATHS), SOURCES), min_size=1, max_size=3))


def _served(snapshot: Snapshot) -> list[tuple[str, str, str | None]]:
    return [(f.path, f.digest, f.problem.kind if f.problem else None) for f in snapshot.files]


def _write(root: Path, path: str, text: str | None) -> None:
    target = root / path
    if text is None:
        target.unlink(missing_ok=True)
        return
    target.parent.mkdir(exist_ok=True)
    target.write_text(text)


@settings(max_examples=40, deadline=None)
@given(st.lists(SOURCES, min_size=3, max_size=3), EDITS, st.booleans())
# A file held through its grace period while a file of a new directory came, then back
# broken: the walk had put it after the new file, where a build told the paths kept it.
@example(
    initial=[None, None, None],
    batches=[
        [("a.mem", 'fact tier { claim: "never main" evidence { source: "t" quote: "q" } }\n')],
        [("a.mem", None), ("sub/c.mem", "")],
        [("a.mem", "fact broken {{ claim: \n")],
    ],
    grace=True,
)
def test_builds_told_the_changed_paths_equal_builds_that_walk(
    initial: list[str | None], batches: list[list[tuple[str, str | None]]], grace: bool
) -> None:
    policy = SavePolicy(vanish_grace_s=60.0 if grace else 0.0, settle_s=0.0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "memdsl.json").write_text(
            json.dumps({"schema_version": "memdsl.workspace.v1", "schemas": []})
        )
        (root / "sub").mkdir()
        for path, text in zip(PATHS[1:4], initial, strict=True):
            _write(root, path, text)
        snapshot = build_snapshot("w", str(root), None, policy=policy)
        for batch in batches:
            # Given a batch of edits the watcher reports by path
            for path, text in batch:
                _write(root, path, text)
            changed = {os.path.join(str(root), path) for path, _ in batch}

            # When the next snapshot is built from those paths alone, and by a walk
            told = build_snapshot("w", str(root), snapshot, policy=policy, changed=changed)
            walked = build_snapshot("w", str(root), snapshot, policy=policy)

            # Then both serve the same files, in the same order, and answer alike
            assert told.pending.keys() == walked.pending.keys()
            if told.pending:
                # A walk puts a file held through its grace period back after new files
                # of its directory, which a build told the paths keeps in walk order.
                assert sorted(_served(told)) == sorted(_served(walked))
                snapshot = told
                continue
            assert _served(told) == _served(walked)
            assert told.workspace.files == walked.workspace.files
            assert told.position_of() == {f.path: n for n, f in enumerate(told.files)}
            assert [p.as_dict() for p in told.problems] == [p.as_dict() for p in walked.problems]
            for query in QUERIES:
                assert (
                    build_evidence_pack(told.workspace, query).as_dict()
                    == build_evidence_pack(walked.workspace, query).as_dict()
                )
            snapshot = told


def test_a_changed_path_only_is_looked_at(tmp_path: Path) -> None:
    # Given a served workspace where one file changes unreported and another reported
    (tmp_path / "a.mem").write_text('fact a { claim: "one" evidence { source: "t" quote: "q" } }\n')
    (tmp_path / "b.mem").write_text('fact b { claim: "two" evidence { source: "t" quote: "q" } }\n')
    first = build_snapshot("w", str(tmp_path), None)
    (tmp_path / "a.mem").write_text('fact a2 { claim: "x" evidence { source: "t" quote: "q" } }\n')
    (tmp_path / "b.mem").write_text('fact b2 { claim: "y" evidence { source: "t" quote: "q" } }\n')

    # When the build is told only about b.mem
    told = build_snapshot(
        "w", str(tmp_path), first, changed={str(tmp_path / "b.mem")}, trusted=True
    )

    # Then only b.mem is read again; a walk (the watcher's re-scan) picks up a.mem
    assert [d.name for d in told.workspace.declarations] == ["a", "b2"]
    assert told.reparsed == 1
    walked = build_snapshot("w", str(tmp_path), told, trusted=True)
    assert [d.name for d in walked.workspace.declarations] == ["a2", "b2"]


def test_a_told_one_file_edit_replaces_that_file_in_place(tmp_path: Path) -> None:
    # Given a served workspace of three files whose positions were looked up
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.mem").write_text(
            f'fact {name} {{ claim: "{name}" evidence {{ source: "t" quote: "q" }} }}\n'
        )
    first = build_snapshot("w", str(tmp_path), None)
    positions = first.position_of()

    # When b.mem changes and the build is told so
    (tmp_path / "b.mem").write_text(
        'fact b2 { claim: "two" evidence { source: "t" quote: "q" } }\n'
    )
    told = build_snapshot(
        "w", str(tmp_path), first, changed={str(tmp_path / "b.mem")}, trusted=True
    )

    # Then the other files are the very same objects, the positions are shared, and
    # the workspace serves the new declaration where b.mem was
    assert told.files[0] is first.files[0] and told.files[2] is first.files[2]
    assert told.files[1] is not first.files[1]
    assert told.position_of() is positions
    assert told.workspace.files == first.workspace.files
    assert [d.name for d in told.workspace.declarations] == ["a", "b2", "c"]
