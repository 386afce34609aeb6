"""Property: a lint carried from the previous one says exactly what a fresh lint says.

Random edit sequences over a few files (files added, rewritten, removed, reordered;
ids, contents, aliases and supersedes shared across files; modules over budget): after
every step `lint_files` from the previous lint's `LintReuse` must give the diagnostics
of `lint(ws)` and of the linter before it was made incremental, in the same order.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lint_fixtures import TODAY
from reference_lint import lint as reference_lint

from memhubd.lang import parse_text
from memhubd.lint import Diagnostic, lint, lint_files
from memhubd.model import Declaration, Workspace
from memhubd.model.declaration import RestoredDeclarations
from memhubd.runtime.cache import ParseCache
from memhubd.runtime.snapshot import build_snapshot, persist
from memhubd.schema import TypeRegistry

REGISTRY = TypeRegistry.standard()
NAMES = ["a", "b", "c", "User", "Boss"]
WORDS = ["likes tea", "Likes Tea ", "ships friday", ""]
FILES = ["a.mem", "b.mem", "c.mem", "d.mem", "e.mem"]


def _declaration(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["fact", "entity", "decision", "state"]))
    name = draw(st.sampled_from(NAMES))
    body = []
    claim = draw(st.sampled_from(WORDS))
    if claim:
        body.append(f'claim: "{claim}"')
    if draw(st.booleans()):
        body.append('evidence { source: "t" }')
    if draw(st.booleans()):
        body.append(f"subject: {draw(st.sampled_from([*NAMES, 'Ghost']))}")
    if draw(st.integers(0, 2)) == 0:
        body.append(f'supersedes: "{draw(st.sampled_from([*NAMES, "fact:a", "nowhere"]))}"')
    if kind == "entity":
        aliases = draw(st.lists(st.sampled_from(["boss", "Boss", "me", "x"]), max_size=2))
        body.append(f"aliases: [{', '.join(aliases)}]")
        if draw(st.booleans()):
            body.append(f'canonical_name: "{draw(st.sampled_from(["Ghost", "Chief"]))}"')
    if draw(st.booleans()):
        body.append(f"status: {draw(st.sampled_from(['active', 'superseded', 'candidate']))}")
    return f"{kind} {name} {{ {' '.join(body)} }}\n"


@st.composite
def sources(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.integers(0, 5)) == 0:
            parts.append(f"module {draw(st.sampled_from(['big', 'small']))}\n")
        parts.append(_declaration(draw))
    if draw(st.integers(0, 6)) == 0:  # a file that fills a module's budget on its own
        parts.append("module big\n" + "".join(f"entity e{n} {{ }}\n" for n in range(30)))
    return "".join(parts)


STEP = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(FILES), sources()),
    st.tuples(st.just("remove"), st.sampled_from(FILES), st.none()),
    st.tuples(st.just("reorder"), st.integers(0, 4), st.integers(0, 4)),
    st.tuples(st.just("relint"), st.none(), st.none()),  # no change at all
    st.tuples(st.just("next day"), st.none(), st.none()),
    st.tuples(st.just("stale previous"), st.none(), st.none()),
)


def _run(path: str, text: str) -> tuple[Declaration, ...]:
    document = parse_text(text, file=path)
    return tuple(
        Declaration.from_raw(raw, REGISTRY.resolve(raw.kind)) for raw in document.declarations
    )


def _full(diagnostics: list[Diagnostic]) -> list[tuple[Any, ...]]:
    return [
        (d.code, d.severity, d.message, d.file, d.line, d.decl_id, d.column) for d in diagnostics
    ]


@settings(max_examples=120, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=10))
def test_carried_lint_equals_a_fresh_lint_after_every_edit(steps: list[Any]) -> None:
    files: dict[str, tuple[Declaration, ...]] = {}
    order: list[str] = []
    today = TODAY
    previous = older = None
    for step, first, second in steps:
        if step == "write":
            files[first] = _run(first, second)
            if first not in order:
                order.append(first)
        elif step == "remove" and first in files:
            del files[first]
            order.remove(first)
        elif step == "reorder" and order:
            a, b = first % len(order), second % len(order)
            order[a], order[b] = order[b], order[a]
        elif step == "next day":
            today += dt.timedelta(days=1)
        runs = [files[path] for path in order]
        ws = Workspace([decl for run in runs for decl in run], list(order), REGISTRY)
        # A lint handed an older result whose facts another lint has already taken on.
        start = older if step == "stale previous" and older is not None else previous

        found, reuse = lint_files(ws, [run for run in runs if run], today, start)

        expected = _full(reference_lint(ws, today))
        assert _full(found) == expected
        assert _full(lint(ws, today)) == expected
        older, previous = previous, reuse


def test_a_one_file_edit_reads_only_that_file() -> None:
    # given a workspace linted once
    runs = [_run(f"f{n}.mem", f'fact f{n} {{ claim: "c{n}" }}\n') for n in range(20)]
    ws = Workspace([d for run in runs for d in run], [], REGISTRY)
    _, reuse = lint_files(ws, runs, TODAY)
    # when one file changes and the others are the same run objects
    runs[3] = _run("f3.mem", 'fact f3 { claim: "c0" }\n')
    ws = Workspace([d for run in runs for d in run], [], REGISTRY)
    found, after = lint_files(ws, runs, TODAY, reuse)
    # then the others keep their facts and diagnostics, and the duplicate is found
    assert all(after.files[id(run)] is reuse.files[id(run)] for n, run in enumerate(runs) if n != 3)
    assert [d.code for d in found if d.code == "duplicate_declaration"] == ["duplicate_declaration"]
    assert after.combined is reuse.combined  # carried over, not rebuilt


def test_reordered_files_change_which_declaration_a_supersedes_target_names() -> None:
    # given `a` declared active in one file and superseded in another, and a supersedes
    active = _run("x.mem", 'fact a { claim: "one" }\n')
    marked = _run("y.mem", 'fact a { claim: "two" status: superseded }\n')
    newer = _run("z.mem", 'fact n { claim: "three" supersedes: "a" }\n')
    _, reuse = lint_files(
        Workspace([*marked, *active, *newer], [], REGISTRY), [marked, active, newer], TODAY
    )
    # when the two files swap places, nothing else changing
    ws = Workspace([*active, *marked, *newer], [], REGISTRY)
    found, _ = lint_files(ws, [active, marked, newer], TODAY, reuse)
    # then the target now names the active one first
    assert _full(found) == _full(reference_lint(ws, TODAY))
    assert "unmarked_supersede_status" in [d.code for d in found]


def test_a_restored_workspace_is_linted_without_making_or_decoding_its_declarations(
    tmp_path: Path,
) -> None:
    # given a workspace saved to the parse cache and restored from it
    root = tmp_path / "ws"
    root.mkdir()
    (root / "memdsl.json").write_text('{"schema_version": "memdsl.workspace.v1", "schemas": []}')
    (root / "a.mem").write_text(
        'entity User { aliases: ["me"] }\n'
        'fact ok { claim: "Fine." subject: User evidence { source: "t" } }\n'
        'fact odd {\n  claim: "Odd."\n  subject: Nobody\n  evidence { source: "t" } }\n'
    )
    (root / "b.mem").write_text('fact twin { claim: "Fine." subject: User supersedes: ok }\n')
    state = tmp_path / "state"
    parsed = build_snapshot("w", str(root), None, cache=ParseCache(state))
    persist(parsed, ParseCache(state))
    restored = build_snapshot("w", str(root), None, cache=ParseCache(state))
    # when it is linted
    found = [d.as_dict() for d in restored.diagnostics()]
    # then it says what the parsed one says, columns included
    assert found == [d.as_dict() for d in parsed.diagnostics()]
    assert {d["decl_id"] for d in found} >= {"fact:odd", "fact:twin"}
    # and only declarations a diagnostic names were made, none of the others decoded
    files = [f.typed.file for f in restored.files if isinstance(f.typed, RestoredDeclarations)]
    assert len(files) == 2
    made = [decl for file in files for _, decl in file._made.values()]  # noqa: SLF001
    assert "User" not in {decl.name for decl in made}
    assert {(d.file, d.line) for d in made} <= {(d["file"], d["line"]) for d in found}


def test_an_ambiguous_alias_moves_to_where_its_first_owner_is_now_first_found() -> None:
    # given an alias two symbols share, its first owner first found in the second file
    before = _run("w.mem", 'fact other { claim: "x" }\n')
    amy = _run("x.mem", "entity Amy { aliases: [boss] }\n")
    zed = _run("y.mem", "entity Zed { aliases: [boss] }\n")
    ws = Workspace([*before, *amy, *zed], [], REGISTRY)
    _, reuse = lint_files(ws, [before, amy, zed], TODAY)
    # when the first file, which names no alias, now declares something named Amy
    after = _run("w.mem", 'fact Amy { claim: "x" }\n')
    ws = Workspace([*after, *amy, *zed], [], REGISTRY)
    found, _ = lint_files(ws, [after, amy, zed], TODAY, reuse)
    # then the finding is located there, as a fresh lint has it
    assert _full(found) == _full(reference_lint(ws, TODAY))
    assert [d.file for d in found if d.code == "ambiguous_alias"] == ["w.mem"]
