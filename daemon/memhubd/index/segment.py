"""The lexical index of one source file: a segment of term, subject and scope postings.

A segment only knows its own declarations (local ordinals, file order) and is never
mutated; workspace-wide facts such as supersession are applied when segments are
composed (`memhubd.index.workspace`), so an edited file costs one new segment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhubd.index.tokens import field_values, word_tokens
from memhubd.model import EXCLUDED_STATUSES

# key -> local bitmap: local ordinal i is bit `0x80 >> (i % 8)` of byte `i // 8`, so a
# segment's bitmap drops into a workspace bitmap with one slice copy.
Postings = Mapping[str, bytes]


@dataclass(frozen=True, slots=True)
class Segment:
    """Postings for the declarations of one file; every ordinal is local to the segment.

    * `search_postings`: token -> query-pool members (active, not a symbol, searchable);
    * `subject_postings`: subject (any non-None value) -> query-pool members with it;
    * `constraint_postings`: token -> active constraints (any capability);
    * `constraints_by_scope` / `constraints_by_subject`: active constraints by exact value;
    * `when_any`: lowered guard trigger phrase -> active constraints with a guard block
      (local ordinals: few per phrase).

    Tokens are unfiltered `[a-z0-9_]+` words of `searchable_text()`: each consumer's
    query terms are already stopword-free, so matching a raw posting is the same as
    matching the consumer's stopword-filtered view of the declaration.
    """

    declarations: tuple[Any, ...]
    ids: tuple[str, ...]
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    subjects: tuple[str | None, ...]
    scopes: tuple[str | None, ...]
    roles: tuple[str, ...]
    high_confidence: tuple[bool, ...]
    in_pool: tuple[bool, ...]
    is_constraint: tuple[bool, ...]
    search_postings: Postings
    subject_postings: Postings
    constraint_postings: Postings
    constraints_by_scope: Postings
    constraints_by_subject: Postings
    when_any: Mapping[str, list[int]]
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
            postings.add(decl, local, pooled, constraint)
    return Segment(
        declarations=tuple(declarations),
        ids=tuple(d.id for d in declarations),
        names=tuple(d.name for d in declarations),
        kinds=tuple(d.kind for d in declarations),
        subjects=tuple(d.subject for d in declarations),
        scopes=tuple(d.scope for d in declarations),
        roles=tuple(d.runtime_role for d in declarations),
        high_confidence=tuple(str(d.confidence or "") == "high" for d in declarations),
        in_pool=tuple(in_pool),
        is_constraint=tuple(is_constraint),
        search_postings=postings.packed(postings.search),
        subject_postings=postings.packed(postings.subjects),
        constraint_postings=postings.packed(postings.constraint_terms),
        constraints_by_scope=postings.packed(postings.by_scope),
        constraints_by_subject=postings.packed(postings.by_subject),
        when_any=postings.triggers,
        supersedes=tuple(supersedes),
    )


class _SegmentPostings:
    """Postings under construction, as int bitmaps (local ordinal i = bit width-1-i)."""

    def __init__(self, size: int) -> None:
        self.nbytes = (size + 7) // 8
        self.top = self.nbytes * 8 - 1
        self.search: dict[str, int] = {}
        self.subjects: dict[str, int] = {}
        self.constraint_terms: dict[str, int] = {}
        self.by_scope: dict[str, int] = {}
        self.by_subject: dict[str, int] = {}
        self.triggers: dict[str, list[int]] = {}

    def add(self, decl: Any, local: int, pooled: bool, constraint: bool) -> None:
        bit = 1 << (self.top - local)
        tokens = set(word_tokens(decl.searchable_text()))
        subject = decl.subject
        if pooled:
            _set_all(self.search, tokens, bit)
            if subject is not None:
                self.subjects[subject] = self.subjects.get(subject, 0) | bit
        if not constraint:
            return
        _set_all(self.constraint_terms, tokens, bit)
        scope = decl.scope
        if scope is not None:
            self.by_scope[scope] = self.by_scope.get(scope, 0) | bit
        if subject is not None:
            self.by_subject[subject] = self.by_subject.get(subject, 0) | bit
        # Applicability reads the raw guard (no type defaults), like the checker does.
        guard = decl.fields.get("guard")
        if isinstance(guard, dict):
            for phrase in dict.fromkeys(p.lower() for p in field_values(guard.get("when_any"))):
                self.triggers.setdefault(phrase, []).append(local)

    def packed(self, postings: dict[str, int]) -> dict[str, bytes]:
        return {key: bits.to_bytes(self.nbytes, "big") for key, bits in postings.items()}


def _set_all(postings: dict[str, int], tokens: set[str], bit: int) -> None:
    get = postings.get
    for token in tokens:
        postings[token] = get(token, 0) | bit
