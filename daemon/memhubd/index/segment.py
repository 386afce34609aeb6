"""The lexical index of one source file: a segment of term, subject and scope postings.

A segment only knows its own declarations (local ordinals, file order) and is never
mutated; workspace-wide facts such as supersession are applied when segments are
composed (`memhubd.index.workspace`), so an edited file costs one new segment.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memhubd.index.tokens import field_values, word_tokens
from memhubd.model import EXCLUDED_STATUSES


@dataclass(frozen=True, slots=True)
class PostingTable:
    """key -> local bitmap, stored compactly: row `i` of `rows` belongs to `keys[i]`.

    Every row is `width` bytes; local ordinal `o` is bit `0x80 >> (o % 8)` of byte
    `o // 8`, so a row drops into a workspace bitmap with one slice copy.
    """

    keys: tuple[str, ...]
    rows: bytes
    width: int

    def row(self, index: int) -> bytes:
        start = index * self.width
        return self.rows[start : start + self.width]

    def as_dict(self) -> dict[str, bytes]:
        return {key: self.row(i) for i, key in enumerate(self.keys)}


@dataclass(frozen=True, slots=True)
class Segment:
    """Postings for the declarations of one file; every ordinal is local to the segment.

    The indexed declarations are the query pool (active, not a symbol, searchable) and
    the active constraints; which of them a posting means is decided by the mask the
    workspace applies (`in_pool` / `is_constraint`).

    * `terms`: unfiltered `[a-z0-9_]+` word of `searchable_text()` -> declarations;
    * `subjects`: subject (any non-None value) -> declarations;
    * `constraint_scopes`: scope (any non-None value) -> constraints;
    * `when_any`: lowered guard trigger phrase -> constraints with a guard block.

    Consumers' query terms are already stopword-free, so matching an unfiltered posting
    is the same as matching their stopword-filtered view of the declaration.
    """

    declarations: tuple[Any, ...]
    ids: tuple[str, ...]
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    subjects_of: tuple[str | None, ...]
    scopes_of: tuple[str | None, ...]
    roles: tuple[str, ...]
    high_confidence: tuple[bool, ...]
    in_pool: tuple[bool, ...]
    is_constraint: tuple[bool, ...]
    terms: PostingTable
    subjects: PostingTable
    constraint_scopes: PostingTable
    when_any: dict[str, tuple[int, ...]]
    supersedes: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.declarations)


def build_segment(declarations: Sequence[Any]) -> Segment:
    """Index the declarations of one file (in file order)."""
    postings = _SegmentPostings(len(declarations))
    in_pool: list[bool] = []
    is_constraint: list[bool] = []
    supersedes: list[str] = []
    for local, decl in enumerate(declarations):
        supersedes.extend(decl.relations().get("supersedes", ()))
        active = decl.status not in EXCLUDED_STATUSES
        role = decl.runtime_role
        pooled = active and role != "symbol" and decl.has_capability("searchable")
        constraint = active and role == "constraint"
        in_pool.append(pooled)
        is_constraint.append(constraint)
        if pooled or constraint:
            postings.add(decl, local, constraint)
    return Segment(
        declarations=tuple(declarations),
        ids=tuple(d.id for d in declarations),
        names=tuple(d.name for d in declarations),
        kinds=tuple(d.kind for d in declarations),
        subjects_of=tuple(d.subject for d in declarations),
        scopes_of=tuple(d.scope for d in declarations),
        roles=tuple(d.runtime_role for d in declarations),
        high_confidence=tuple(str(d.confidence or "") == "high" for d in declarations),
        in_pool=tuple(in_pool),
        is_constraint=tuple(is_constraint),
        terms=postings.table(postings.terms),
        subjects=postings.table(postings.subjects),
        constraint_scopes=postings.table(postings.scopes),
        when_any={phrase: tuple(found) for phrase, found in postings.triggers.items()},
        supersedes=tuple(supersedes),
    )


class _SegmentPostings:
    """Postings under construction, as int bitmaps (local ordinal i = bit width-1-i)."""

    def __init__(self, size: int) -> None:
        self.width = (size + 7) // 8
        self.top = self.width * 8 - 1
        self.terms: dict[str, int] = {}
        self.subjects: dict[str, int] = {}
        self.scopes: dict[str, int] = {}
        self.triggers: dict[str, list[int]] = {}

    def add(self, decl: Any, local: int, constraint: bool) -> None:
        bit = 1 << (self.top - local)
        terms = self.terms
        get = terms.get
        for token in set(word_tokens(decl.searchable_text())):
            terms[token] = get(token, 0) | bit
        subject = decl.subject
        if subject is not None:
            self.subjects[subject] = self.subjects.get(subject, 0) | bit
        if not constraint:
            return
        scope = decl.scope
        if scope is not None:
            self.scopes[scope] = self.scopes.get(scope, 0) | bit
        # Applicability reads the raw guard (no type defaults), like the checker does.
        guard = decl.fields.get("guard")
        if isinstance(guard, dict):
            for phrase in dict.fromkeys(p.lower() for p in field_values(guard.get("when_any"))):
                self.triggers.setdefault(phrase, []).append(local)

    def table(self, postings: dict[str, int]) -> PostingTable:
        rows = b"".join(bits.to_bytes(self.width, "big") for bits in postings.values())
        # Interned, so all segments share one string object per distinct key.
        keys = tuple(sys.intern(key) for key in postings)
        return PostingTable(keys=keys, rows=rows, width=self.width)
