"""The workspace-wide lint checks, kept per file run and combined incrementally.

What those checks need of a file run (ids, names, content hashes, supersedes targets,
aliases, symbols, modules, statuses) is read once, when the run is new; the combined
facts of the previous lint are updated by removing the runs that left and adding the
new ones, so a one-file edit costs that file plus merges over the file list. Findings
follow memdsl's "first by file order" rules. Nothing here holds a workspace or snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memhubd.lint.diagnostics import ERROR, WARNING, Diagnostic
from memhubd.model import EXCLUDED_STATUSES, Declaration

MODULE_MAX_DECLARATIONS = 50
NO_MODULE = "<no module>"

Position = tuple[int, int]  # (run number in file order, declaration number in the run)


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the workspace-wide checks need of one file run, declaration by declaration."""

    ids: tuple[str, ...]
    names: tuple[str, ...]
    contents: tuple[int | None, ...]  # hash of the content key; None for an empty claim
    statuses: tuple[str, ...]
    supersedes: tuple[str, ...]  # distinct targets, in first-mention order
    aliases: tuple[tuple[str, str], ...]  # (lowercased alias, symbol name), in order
    symbols: tuple[str, ...]  # symbol names and their string canonical names
    modules: tuple[tuple[str, int, int], ...]  # (module, count, first declaration number)


def content_key(decl: Declaration) -> tuple[str, str | None, str | None, str]:
    return (decl.kind, decl.subject, decl.scope, decl.claim_text.strip().lower())


def read_facts(run: Iterable[Declaration]) -> RunFacts:
    ids: list[str] = []
    names: list[str] = []
    contents: list[int | None] = []
    statuses: list[str] = []
    targets: dict[str, None] = {}
    aliases: list[tuple[str, str]] = []
    symbols: list[str] = []
    modules: dict[str, list[int]] = {}
    for number, decl in enumerate(run):
        ids.append(decl.id)
        names.append(decl.name)
        key = content_key(decl)
        contents.append(hash(key) if key[3] else None)
        statuses.append(decl.status)
        targets.update(dict.fromkeys(decl.relation_targets("supersedes")))
        if decl.runtime_role == "symbol":
            symbols.append(decl.name)
            fields = decl.fields
            canonical = fields.get("canonical_name")
            if isinstance(canonical, str):
                symbols.append(canonical)
            listed = fields.get("aliases", [])
            if isinstance(listed, list):
                aliases.extend((str(alias).lower(), decl.name) for alias in listed)
        module = decl.module or NO_MODULE
        counted = modules.get(module)
        if counted is None:
            modules[module] = [1, number]
        else:
            counted[0] += 1
    return RunFacts(
        tuple(ids),
        tuple(names),
        tuple(contents),
        tuple(statuses),
        tuple(targets),
        tuple(aliases),
        tuple(symbols),
        tuple((module, count, first) for module, (count, first) in modules.items()),
    )


class _Holders:
    """key -> the runs holding it, once per occurrence: a run key, or a list when more."""

    __slots__ = ("map", "multi")

    def __init__(self) -> None:
        self.map: dict[Any, Any] = {}
        self.multi: set[Any] = set()  # keys with more than one occurrence

    def add(self, keys: Iterable[Any], run: int) -> None:
        held_by, multi = self.map, self.multi
        for key in keys:
            held = held_by.get(key)
            if held is None:
                held_by[key] = run
            elif type(held) is list:
                held.append(run)
            else:
                held_by[key] = [held, run]
                multi.add(key)

    def remove(self, keys: Iterable[Any], run: int) -> None:
        held_by = self.map
        for key in keys:
            held = held_by[key]
            if type(held) is not list:
                del held_by[key]
                continue
            held.remove(run)
            if len(held) == 1:
                held_by[key] = held[0]
                self.multi.discard(key)

    def runs(self, key: Any) -> set[int]:
        held = self.map.get(key)
        if held is None:
            return set()
        return set(held) if type(held) is list else {held}


class Combined:
    """The workspace-wide facts of the runs of one lint, updated in place by the next.

    Only the lint result (`LintReuse`) named `holder` may hand it on; a lint that finds
    another holder rebuilds its own from the runs' facts.
    """

    __slots__ = (
        "holder", "facts", "order", "ids", "names", "symbols", "contents", "aliases",
        "mentions", "module_runs", "module_counts", "big_modules", "unmarked", "ambiguous",
    )  # fmt: skip

    def __init__(self) -> None:
        self.holder: object = None
        self.facts: dict[int, RunFacts] = {}
        self.order: list[int] = []  # run keys in file order
        self.ids = _Holders()
        self.names = _Holders()
        self.symbols = _Holders()
        self.contents = _Holders()
        self.aliases = _Holders()
        self.mentions = _Holders()  # supersedes target -> runs mentioning it
        self.module_runs = _Holders()
        self.module_counts: dict[str, int] = {}
        self.big_modules: set[str] = set()
        # supersedes target -> (run key, number) of what it names, while its status
        # is not excluded (the findings of `unmarked_supersede_status`).
        self.unmarked: dict[str, tuple[int, int]] = {}
        # ambiguous alias -> (run key, number among the run's aliases) of its first
        # mention, its first owner, and its diagnostic (kept while nothing they depend on
        # changes: thousands at 1M).
        self.ambiguous: dict[str, tuple[int, int, str, Diagnostic]] = {}

    def __contains__(self, text: object) -> bool:
        """Is `text` a known name: a declaration's name or id, or a symbol's name?"""
        return text in self.ids.map or text in self.names.map or text in self.symbols.map

    def add(self, run: int, facts: RunFacts) -> None:
        self.facts[run] = facts
        self.ids.add(facts.ids, run)
        self.names.add(facts.names, run)
        self.symbols.add(facts.symbols, run)
        self.contents.add(_given(facts.contents), run)
        self.aliases.add((alias for alias, _ in facts.aliases), run)
        self.mentions.add(facts.supersedes, run)
        self.module_runs.add((module for module, _, _ in facts.modules), run)
        counts = self.module_counts
        for module, count, _ in facts.modules:
            total = counts[module] = counts.get(module, 0) + count
            if total > MODULE_MAX_DECLARATIONS:
                self.big_modules.add(module)

    def remove(self, run: int) -> RunFacts:
        facts = self.facts.pop(run)
        self.ids.remove(facts.ids, run)
        self.names.remove(facts.names, run)
        self.symbols.remove(facts.symbols, run)
        self.contents.remove(_given(facts.contents), run)
        self.aliases.remove((alias for alias, _ in facts.aliases), run)
        self.mentions.remove(facts.supersedes, run)
        self.module_runs.remove((module for module, _, _ in facts.modules), run)
        counts = self.module_counts
        for module, count, _ in facts.modules:
            total = counts[module] - count
            if total:
                counts[module] = total
            else:
                del counts[module]
            if total <= MODULE_MAX_DECLARATIONS:
                self.big_modules.discard(module)
        return facts

    def first(self, key: str, position: dict[int, int]) -> tuple[int, int] | None:
        """(run key, number) of the first declaration whose id or name is `key` (`by_id`)."""
        best: tuple[Position, int] | None = None
        for run in self.ids.runs(key) | self.names.runs(key):
            facts = self.facts[run]
            ids, names = facts.ids, facts.names
            number = next(n for n in range(len(ids)) if ids[n] == key or names[n] == key)
            at = (position[run], number)
            if best is None or at < best[0]:
                best = (at, run)
        return None if best is None else (best[1], best[0][1])

    def recheck_supersedes(self, targets: Iterable[str], position: dict[int, int]) -> None:
        """Work out again whether each of `targets` names a declaration not marked."""
        unmarked, mentioned = self.unmarked, self.mentions.map
        for target in targets:
            found = self.first(target, position) if target in mentioned else None
            if found is None or self.facts[found[0]].statuses[found[1]] in EXCLUDED_STATUSES:
                unmarked.pop(target, None)
            else:
                unmarked[target] = found


def _given(contents: Iterable[int | None]) -> Iterable[int]:
    return (digest for digest in contents if digest is not None)


def _diagnostic(
    decl: Declaration, code: str, severity: str, message: str, *, own: bool = True
) -> Diagnostic:
    """A diagnostic located at `decl`; `own=False` for workspace-level findings (no decl_id)."""
    decl_id = decl.id if own else None
    return Diagnostic(code, severity, message, decl.file, decl.line, decl_id, where=(decl, ()))


class Findings:
    """The workspace-wide diagnostics of `combined` over `runs` (the runs in file order)."""

    def __init__(self, combined: Combined, runs: Sequence[Sequence[Declaration]]) -> None:
        self.combined = combined
        self.runs = runs
        self.position = {run: number for number, run in enumerate(combined.order)}

    def _decl(self, at: Position) -> Declaration:
        return self.runs[at[0]][at[1]]

    def _occurrences(self, holders: _Holders, key: Any, column: str) -> list[Position]:
        found: list[Position] = []
        for run in holders.runs(key):
            values = getattr(self.combined.facts[run], column)
            number = self.position[run]
            found.extend((number, n) for n, value in enumerate(values) if value == key)
        found.sort()
        return found

    def duplicate_ids(self) -> list[Diagnostic]:
        found: list[tuple[Position, Diagnostic]] = []
        for decl_id in self.combined.ids.multi:
            first, *later = self._occurrences(self.combined.ids, decl_id, "ids")
            head = self._decl(first)
            message = f"'{decl_id}' already declared at {head.file}:{head.line}"
            for at in later:
                found.append(
                    (at, _diagnostic(self._decl(at), "duplicate_declaration_id", ERROR, message))
                )
        return _in_order(found)

    def duplicate_contents(self) -> list[Diagnostic]:
        found: list[tuple[Position, Diagnostic]] = []
        for digest in self.combined.contents.multi:
            # Confirmed on the full key: a shared hash alone proves nothing.
            firsts: dict[tuple[Any, ...], Declaration] = {}
            for at in self._occurrences(self.combined.contents, digest, "contents"):
                decl = self._decl(at)
                first = firsts.setdefault(content_key(decl), decl)
                if first is not decl and first.id != decl.id:  # a re-declared id is not this
                    message = f"'{decl.id}' duplicates '{first.id}' (same type/subject/scope/claim)"
                    found.append((at, _diagnostic(decl, "duplicate_declaration", WARNING, message)))
        return _in_order(found)

    def ambiguous_aliases(self, recheck: set[str] | None) -> list[Diagnostic]:
        """`recheck`: the aliases whose finding may have changed since the previous lint
        (None: any of them)."""
        combined, position, kept = self.combined, self.position, self.combined.ambiguous
        if recheck is None:
            kept.clear()
        for alias in combined.aliases.multi if recheck is None else recheck:
            kept.pop(alias, None)
            if alias in combined.aliases.multi:
                self._ambiguous_alias(alias)
        found = [(position[run], number, diag) for run, number, _, diag in kept.values()]
        found.sort(key=lambda item: item[:2])
        return [diag for _, _, diag in found]

    def _ambiguous_alias(self, alias: str) -> None:
        combined, position = self.combined, self.position
        owners: set[str] = set()
        seen: list[tuple[int, int, int]] = []
        for run in combined.aliases.runs(alias):
            pairs = combined.facts[run].aliases
            mine = [n for n, pair in enumerate(pairs) if pair[0] == alias]
            owners.update(pairs[n][1] for n in mine)
            seen.append((position[run], mine[0], run))
        if len(owners) < 2:
            return
        ordered = sorted(owners)
        message = f"alias '{alias}' resolves to multiple symbols: {', '.join(ordered)}"
        # Located at whatever declaration the first owner's name finds first.
        symbol = combined.first(ordered[0], position)
        if symbol is None:
            diag = Diagnostic("ambiguous_alias", WARNING, message, "<workspace>", 0)
        else:
            decl = self._decl((position[symbol[0]], symbol[1]))
            diag = _diagnostic(decl, "ambiguous_alias", WARNING, message, own=False)
        _, number, run = min(seen)
        combined.ambiguous[alias] = (run, number, ordered[0], diag)

    def unmarked_supersedes(self) -> list[Diagnostic]:
        combined, position = self.combined, self.position
        found: list[tuple[Position, Diagnostic]] = []
        for target, (run, number) in combined.unmarked.items():
            mentioned = min(
                (position[r], combined.facts[r].supersedes.index(target))
                for r in combined.mentions.runs(target)
            )
            superseded = self._decl((position[run], number))
            status = combined.facts[run].statuses[number]  # read without decoding fields
            message = (
                f"'{superseded.id}' is superseded by a newer declaration but its status is "
                f"'{status}'; mark it status: superseded"
            )
            diag = _diagnostic(superseded, "unmarked_supersede_status", WARNING, message)
            found.append((mentioned, diag))
        return _in_order(found)

    def module_sizes(self) -> list[Diagnostic]:
        combined, position = self.combined, self.position
        found: list[tuple[Position, Diagnostic]] = []
        for module in combined.big_modules:
            first = min(
                (position[run], next(f for m, _, f in combined.facts[run].modules if m == module))
                for run in combined.module_runs.runs(module)
            )
            count = combined.module_counts[module]
            message = (
                f"module '{module}' has {count} declarations "
                f"(budget {MODULE_MAX_DECLARATIONS}); split it"
            )
            found.append(
                (
                    first,
                    _diagnostic(self._decl(first), "module_too_large", WARNING, message, own=False),
                )
            )
        return _in_order(found)


def _in_order(found: list[tuple[Position, Diagnostic]]) -> list[Diagnostic]:
    """The diagnostics in the order a pass over the declarations would have made them."""
    found.sort(key=lambda item: item[0])
    return [diag for _, diag in found]
