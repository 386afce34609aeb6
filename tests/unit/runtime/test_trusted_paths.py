"""build_snapshot trusting the paths its caller wrote: those are served at once, and
every other file still follows the save rules (a save caught half-way is held back)."""

from __future__ import annotations

from pathlib import Path

from memhubd.runtime.snapshot import SavePolicy, Snapshot, build_snapshot

FACTS = "".join(
    f'fact notes.{name} {{\n  claim: "Fact {name}."\n  evidence {{ source: "t" quote: "q" }}\n}}\n'
    for name in ("a", "b")
)
HALF = FACTS[: FACTS.index("fact notes.b")]
SETTLE = SavePolicy(vanish_grace_s=30.0, settle_s=30.0)  # long: nothing settles by itself


def ids(snapshot: Snapshot) -> set[str]:
    return {f"{d.id}@{Path(d.file).name}" for d in snapshot.workspace.declarations}


def test_only_the_trusted_paths_skip_the_settle_wait(tmp_path: Path) -> None:
    # given two files served whole
    for name in ("written.mem", "saving.mem"):
        (tmp_path / name).write_text(FACTS.replace("notes.", f"{name[:-4]}."), encoding="utf-8")
    before = build_snapshot("ws", str(tmp_path), None, policy=SETTLE)
    # when both lose a declaration, one written by the caller and one by an editor mid-save
    for name in ("written.mem", "saving.mem"):
        (tmp_path / name).write_text(HALF.replace("notes.", f"{name[:-4]}."), encoding="utf-8")
    after = build_snapshot(
        "ws", str(tmp_path), before, policy=SETTLE, trusted=[str(tmp_path / "written.mem")]
    )
    # then the caller's write is served, and the other file's save is held back
    assert ids(after) == {
        "fact:written.a@written.mem",
        "fact:saving.a@saving.mem",
        "fact:saving.b@saving.mem",
    }
    assert set(after.pending) == {str(tmp_path / "saving.mem")}


def test_a_trusted_path_is_matched_through_a_linked_directory(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "facts.mem").write_text(FACTS, encoding="utf-8")
    linked = tmp_path / "linked"
    linked.symlink_to(real, target_is_directory=True)
    before = build_snapshot("ws", str(linked), None, policy=SETTLE)
    (real / "facts.mem").write_text(HALF, encoding="utf-8")
    after = build_snapshot(
        "ws", str(linked), before, policy=SETTLE, trusted=[str(real / "facts.mem")]
    )
    assert ids(after) == {"fact:notes.a@facts.mem"}
