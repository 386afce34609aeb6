"""`lint(ws)`: memdsl 0.5.1's diagnostics for a whole workspace (spec §3).

Workspace-wide checks run around the per-declaration ones in memdsl's emission
order, then one stable sort by (file, line, code). Lint reports; it never fixes.
`lint_files` gives the same answer from a previous lint (`LintReuse`): files that did
not change keep their per-declaration diagnostics, as long as every name they looked
up is still known or unknown as it was, and the workspace-wide checks start from the
previous lint's combined facts (`workspace_facts`), updated by the files that changed.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter

from memhubd.lint.declaration_checks import check_declaration
from memhubd.lint.diagnostics import Diagnostic
from memhubd.lint.workspace_facts import (
    MODULE_MAX_DECLARATIONS,
    NO_MODULE,
    Combined,
    Findings,
    RunFacts,
    read_facts,
)
from memhubd.model import Declaration, Workspace
from memhubd.model.declaration import RestoredDeclarations, RestoredSubset

__all__ = ["MODULE_MAX_DECLARATIONS", "NO_MODULE", "LintReuse", "lint", "lint_files"]

_SORT_KEY = attrgetter("file", "line", "code")
# Handing a lint's combined facts on to the next is one step: two lints starting from
# the same previous one must not both update them.
_HANDOVER = threading.Lock()


def lint(ws: Workspace, today: dt.date | None = None) -> list[Diagnostic]:
    """Every diagnostic for `ws`, sorted by (file, line, code); `today` defaults to now."""
    return lint_files(ws, [ws.declarations], today)[0]


@dataclass(frozen=True, slots=True)
class _FileLint:
    declarations: Sequence[Declaration]  # the very objects checked
    facts: RunFacts
    diagnostics: list[Diagnostic]
    lookups: dict[str, bool]  # every name the checks looked up -> was it known


@dataclass(frozen=True, slots=True, eq=False)
class LintReuse:
    """Per-file results of one lint and its combined facts. Holds no workspace or snapshot."""

    today: dt.date
    files: dict[int, _FileLint]  # id(declarations sequence) -> its results
    combined: Combined


class _Recording:
    """Known names that remember each answer, so a later lint can tell whether it holds."""

    __slots__ = ("known", "seen")

    def __init__(self, known: Combined) -> None:
        self.known = known
        self.seen: dict[str, bool] = {}

    def __contains__(self, text: object) -> bool:
        found = text in self.known
        if isinstance(text, str):
            self.seen[text] = found
        return found


def lint_today() -> dt.date:
    """The day lint judges staleness on when none is given: the local date, as memdsl's
    lint takes it (a served lint made on another day is made again)."""
    return dt.date.today()


def lint_files(
    ws: Workspace,
    files: Sequence[Sequence[Declaration]],
    today: dt.date | None = None,
    previous: LintReuse | None = None,
) -> tuple[list[Diagnostic], LintReuse]:
    """`lint(ws)` where `files` split `ws.declarations` (in order) into per-file runs.

    A run that is the same object as one linted in `previous` keeps its facts, and on
    the same day its diagnostics when every name it looked up resolves as it did then.
    """
    if today is None:
        today = lint_today()
    runs = _distinct(files)
    keys = [id(run) for run in runs]
    before = previous.files if previous is not None else {}
    kept = {
        key: found
        for key, run in zip(keys, runs, strict=True)
        if _same(found := before.get(key), run)
    }
    facts = {
        key: kept[key].facts if key in kept else read_facts(d for _, d, _ in _passing(run))
        for key, run in zip(keys, runs, strict=True)
    }
    combined, flipped, aliases = _combine(previous, keys, facts)
    same_day = previous is not None and previous.today == today
    out: list[Diagnostic] = []
    findings = Findings(combined, runs)
    out.extend(findings.duplicate_ids())
    out.extend(findings.duplicate_contents())
    out.extend(findings.ambiguous_aliases(aliases))
    done: dict[int, _FileLint] = {}
    for key, run in zip(keys, runs, strict=True):
        old = kept.get(key)
        if old is not None and same_day and _still_valid(old, combined, flipped):
            out.extend(old.diagnostics)
            done[key] = old
            continue
        recording = _Recording(combined)
        mine: list[Diagnostic] = []
        for number, decl, stand_in in _passing(run):
            start = len(mine)
            check_declaration(decl, recording, today, mine)
            if stand_in and len(mine) > start:
                made = run[number]
                for diag in mine[start:]:
                    diag.relocate(made)
        out.extend(mine)
        done[key] = _FileLint(run, facts[key], mine, recording.seen)
    out.extend(findings.unmarked_supersedes())
    out.extend(findings.module_sizes())
    out.sort(key=_SORT_KEY)
    reuse = LintReuse(today, done, combined)
    combined.holder = reuse
    return out, reuse


def _passing(run: Sequence[Declaration]) -> Iterator[tuple[int, Declaration, bool]]:
    """Each declaration of `run` with its number, and whether it is a stand-in: a file
    restored from the parse cache lends one, fields decoded, for each declaration not
    made yet, so that linting it leaves nothing made or decoded behind (at 1M that is
    about a gigabyte)."""
    file = run.file if isinstance(run, (RestoredDeclarations, RestoredSubset)) else None
    if file is None or file.columns is None:
        for number, decl in enumerate(run):
            yield number, decl, False
        return
    ordinals = run.ordinals if isinstance(run, RestoredSubset) else range(len(run))
    for number, ordinal in enumerate(ordinals):
        stand_in = file.passing(ordinal)
        if stand_in is None:
            yield number, run[number], False
        else:
            yield number, stand_in, True


def _distinct(files: Sequence[Sequence[Declaration]]) -> list[Sequence[Declaration]]:
    """The runs, a run given twice copied so that each has its own identity."""
    seen: set[int] = set()
    runs: list[Sequence[Declaration]] = []
    for run in files:
        if id(run) in seen:
            run = list(run)
        seen.add(id(run))
        runs.append(run)
    return runs


def _same(found: _FileLint | None, run: Sequence[Declaration]) -> bool:
    return found is not None and found.declarations is run


def _still_valid(old: _FileLint, known: Combined, flipped: set[str] | None) -> bool:
    """Does every name `old` looked up still resolve as it did? `flipped` holds the names
    whose knownness changed since the previous lint, None when that is not known."""
    if flipped is not None:
        return old.lookups.keys().isdisjoint(flipped)
    return all((name in known) == was for name, was in old.lookups.items())


def _combine(
    previous: LintReuse | None, keys: list[int], facts: dict[int, RunFacts]
) -> tuple[Combined, set[str] | None, set[str] | None]:
    """The combined facts of the runs `keys`, the names whose knownness changed since
    `previous`, and the aliases whose finding may have changed (both None when they
    were combined afresh)."""
    combined = _take(previous)
    position = {key: number for number, key in enumerate(keys)}
    if combined is None:
        combined = Combined()
        for key in keys:
            combined.add(key, facts[key])
        combined.order = keys
        combined.recheck_supersedes(list(combined.mentions.map), position)
        return combined, None, None
    gone = [key for key in combined.order if key not in facts]
    new = [key for key in keys if key not in combined.facts]
    staying = [key for key in combined.order if key in facts]
    reordered = staying != [key for key in keys if key in combined.facts]
    changed = [combined.facts[key] for key in gone] + [facts[key] for key in new]
    touched = {name for run in changed for name in (*run.ids, *run.names, *run.symbols)}
    known_before = {name for name in touched if name in combined}
    for key in gone:
        combined.remove(key)
    for key in new:
        combined.add(key, facts[key])
    combined.order = keys
    flipped = known_before.symmetric_difference(name for name in touched if name in combined)
    if reordered:  # which declaration comes first may have changed for any name
        recheck: set[str] = set(combined.mentions.map) | set(combined.unmarked)
    else:
        recheck = {target for run in changed for target in run.supersedes}
        recheck.update(name for name in touched if name in combined.mentions.map)
        recheck.update(name for name in touched if name in combined.unmarked)
    combined.recheck_supersedes(recheck, position)
    if reordered:
        return combined, flipped, None
    # An alias's finding depends on the runs naming it and on where its first owner is.
    aliases = {alias for run in changed for alias, _ in run.aliases}
    aliases.update(alias for alias, kept in combined.ambiguous.items() if kept[2] in touched)
    return combined, flipped, aliases


def _take(previous: LintReuse | None) -> Combined | None:
    """`previous`'s combined facts, now this lint's to update; None if another lint
    took them first (or there are none)."""
    if previous is None:
        return None
    with _HANDOVER:
        combined = previous.combined
        if combined.holder is not previous:
            return None
        combined.holder = None
        return combined
