"""The linter before its workspace-wide checks were combined per file, kept as an
oracle for the incremental one.

`lint(ws)`: memdsl 0.5.1's diagnostics for a whole workspace (spec §3).

Workspace-wide checks run around the per-declaration ones in memdsl's emission
order, then one stable sort by (file, line, code). Lint reports; it never fixes.
`lint_files` gives the same answer and reuses the per-declaration diagnostics of
files that did not change since a previous lint (`LintReuse`), as long as every
name those files looked up is still known or unknown as it was.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

from memhubd.lint.declaration_checks import check_declaration
from memhubd.lint.diagnostics import ERROR, WARNING, Diagnostic
from memhubd.model import EXCLUDED_STATUSES, Declaration, Workspace

MODULE_MAX_DECLARATIONS = 50
NO_MODULE = "<no module>"

_SORT_KEY = attrgetter("file", "line", "code")


class KnownNames:
    __slots__ = ("names", "symbols")

    def __init__(self, names: frozenset[str], symbols: frozenset[str]) -> None:
        self.names = names
        self.symbols = symbols

    def __contains__(self, text: object) -> bool:
        return text in self.names or text in self.symbols


def lint(ws: Workspace, today: dt.date | None = None) -> list[Diagnostic]:
    """Every diagnostic for `ws`, sorted by (file, line, code); `today` defaults to now."""
    return lint_files(ws, [ws.declarations], today)[0]


@dataclass(frozen=True, slots=True)
class _FileLint:
    declarations: Sequence[Declaration]  # the very objects checked
    diagnostics: list[Diagnostic]
    lookups: dict[str, bool]  # every name the checks looked up -> was it known


@dataclass(frozen=True, slots=True)
class LintReuse:
    """Per-file declaration diagnostics of one lint. Holds no workspace or snapshot."""

    today: dt.date
    files: dict[int, _FileLint]  # id(declarations sequence) -> its results


class _Recording:
    """KnownNames that remembers each answer, so a later lint can tell whether it holds."""

    __slots__ = ("known", "seen")

    def __init__(self, known: KnownNames) -> None:
        self.known = known
        self.seen: dict[str, bool] = {}

    def __contains__(self, text: object) -> bool:
        found = text in self.known
        if isinstance(text, str):
            self.seen[text] = found
        return found


def lint_files(
    ws: Workspace,
    files: Sequence[Sequence[Declaration]],
    today: dt.date | None = None,
    previous: LintReuse | None = None,
) -> tuple[list[Diagnostic], LintReuse]:
    """`lint(ws)` where `files` split `ws.declarations` (in order) into per-file runs.

    A run that is the same object as one linted in `previous`, on the same day, keeps
    its diagnostics when every name it looked up resolves as it did then.
    """
    if today is None:
        today = dt.date.today()
    known = KnownNames(ws.known_names(), ws.known_symbols())
    ambiguous = _ambiguous_aliases(ws)
    superseded = _supersede_targets(ws)
    # One pass resolves every name these two checks need (like `by_id`, first match).
    located = ws.by_ids([*(owners[0] for _, owners in ambiguous), *superseded])
    out: list[Diagnostic] = []
    _check_duplicate_ids(ws.declarations, out)
    _check_duplicate_content(ws.declarations, out)
    _report_ambiguous_aliases(ambiguous, located, out)
    reusable = previous.files if previous is not None and previous.today == today else {}
    done: dict[int, _FileLint] = {}
    for run in files:
        before = reusable.get(id(run))
        if (
            before is not None
            and before.declarations is run
            and all((name in known) == was for name, was in before.lookups.items())
        ):
            out.extend(before.diagnostics)
            done[id(run)] = before
            continue
        recording = _Recording(known)
        mine: list[Diagnostic] = []
        for decl in run:
            check_declaration(decl, recording, today, mine)  # type: ignore[arg-type]
        out.extend(mine)
        done[id(run)] = _FileLint(run, mine, recording.seen)
    _check_unmarked_supersedes(superseded, located, out)
    _check_module_sizes(ws.declarations, out)
    out.sort(key=_SORT_KEY)
    return out, LintReuse(today, done)


def _diagnostic(
    decl: Declaration, code: str, severity: str, message: str, *, own: bool = True
) -> Diagnostic:
    """A diagnostic located at `decl`; `own=False` for workspace-level findings (no decl_id)."""
    decl_id = decl.id if own else None
    return Diagnostic(code, severity, message, decl.file, decl.line, decl_id, where=(decl, ()))


def _check_duplicate_ids(declarations: list[Declaration], out: list[Diagnostic]) -> None:
    first_by_id: dict[str, Declaration] = {}
    for decl in declarations:
        first = first_by_id.get(decl.id)
        if first is None:
            first_by_id[decl.id] = decl
        else:
            message = f"'{decl.id}' already declared at {first.file}:{first.line}"
            out.append(_diagnostic(decl, "duplicate_declaration_id", ERROR, message))


def _content_key(decl: Declaration) -> tuple[str, str | None, str | None, str]:
    return (decl.kind, decl.subject, decl.scope, decl.claim_text.strip().lower())


def _check_duplicate_content(declarations: list[Declaration], out: list[Diagnostic]) -> None:
    # Keyed by the hash of (type, subject, scope, lowercased claim) so that 100k keys
    # are not all kept alive at once; a hash hit is confirmed on the full key, and
    # the rare true collision turns the entry into a list.
    firsts: dict[int, Declaration | list[Declaration]] = {}
    for decl in declarations:
        key = _content_key(decl)
        if not key[3]:
            continue
        digest = hash(key)
        entry = firsts.get(digest)
        if entry is None:
            firsts[digest] = decl
            continue
        bucket = entry if isinstance(entry, list) else [entry]
        first = next((d for d in bucket if _content_key(d) == key), None)
        if first is None:
            firsts[digest] = [*bucket, decl]
        elif first.id != decl.id:  # a re-declared id is reported as such, not here
            message = f"'{decl.id}' duplicates '{first.id}' (same type/subject/scope/claim)"
            out.append(_diagnostic(decl, "duplicate_declaration", WARNING, message))


def _ambiguous_aliases(ws: Workspace) -> list[tuple[str, list[str]]]:
    """(alias, sorted distinct owners) for every alias naming more than one symbol."""
    ambiguous: list[tuple[str, list[str]]] = []
    for alias, names in ws.alias_map().items():
        owners = sorted(set(names))
        if len(owners) > 1:
            ambiguous.append((alias, owners))
    return ambiguous


def _report_ambiguous_aliases(
    ambiguous: list[tuple[str, list[str]]],
    located: dict[str, Declaration],
    out: list[Diagnostic],
) -> None:
    for alias, owners in ambiguous:
        message = f"alias '{alias}' resolves to multiple symbols: {', '.join(owners)}"
        # Located at whatever declaration the first owner's name finds first.
        symbol = located.get(owners[0])
        if symbol is None:
            out.append(Diagnostic("ambiguous_alias", WARNING, message, "<workspace>", 0))
        else:
            out.append(_diagnostic(symbol, "ambiguous_alias", WARNING, message, own=False))


def _supersede_targets(ws: Workspace) -> list[str]:
    """Each distinct `supersedes` target once, in first-mention order."""
    targets: dict[str, None] = {}
    for decl in ws.declarations:
        targets.update(dict.fromkeys(decl.relation_targets("supersedes")))
    return list(targets)


def _check_unmarked_supersedes(
    targets: list[str], located: dict[str, Declaration], out: list[Diagnostic]
) -> None:
    for target in targets:
        superseded = located.get(target)
        if superseded is None or superseded.status in EXCLUDED_STATUSES:
            continue
        message = (
            f"'{superseded.id}' is superseded by a newer declaration but its status is "
            f"'{superseded.status}'; mark it status: superseded"
        )
        out.append(_diagnostic(superseded, "unmarked_supersede_status", WARNING, message))


def _check_module_sizes(declarations: list[Declaration], out: list[Diagnostic]) -> None:
    counts: dict[str, int] = {}
    firsts: dict[str, Declaration] = {}
    for decl in declarations:
        module = decl.module or NO_MODULE
        counts[module] = counts.get(module, 0) + 1
        firsts.setdefault(module, decl)
    for module, count in counts.items():
        if count > MODULE_MAX_DECLARATIONS:
            first = firsts[module]
            message = (
                f"module '{module}' has {count} declarations "
                f"(budget {MODULE_MAX_DECLARATIONS}); split it"
            )
            out.append(_diagnostic(first, "module_too_large", WARNING, message, own=False))
