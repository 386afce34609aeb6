"""The lexical index of one source file: a segment of term, subject and scope postings.

A segment only knows its own declarations (local ordinals, file order) and is never
mutated; workspace-wide facts such as supersession are applied when segments are
composed (`memhubd.index.workspace`), so an edited file costs one new segment.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import itemgetter
from typing import Any

from memhubd.index.tokens import field_values, lowered_word_tokens
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
    # key -> row number, built once with the table so composing an index costs no
    # Python work per key (a workspace holds thousands of segments).
    index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def row(self, index: int) -> bytes:
        start = index * self.width
        return self.rows[start : start + self.width]

    def as_dict(self) -> dict[str, bytes]:
        return {key: self.row(i) for i, key in enumerate(self.keys)}

    def passing_keys(self) -> tuple[str, ...]:
        """The keys, for a reader that keeps them no longer than it needs them."""
        return self.keys


class LazyPostingTable(PostingTable):
    """A posting table whose key -> row dict is made when first read: composing an
    index reads the keys alone, and a query reads the dicts of the few files holding a
    rare key, so most are never made (those of a role-limited view's cut segments
    held 27 MiB at 100k declarations). `cut_segment` makes these; a restored table
    (`memhubd.runtime.cache.RestoredPostingTable`) also decodes its keys when read."""

    def __init__(self, keys: tuple[str, ...], rows: bytes, width: int) -> None:
        # Not the frozen dataclass's __init__: `index` is a property here.
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "_index", None)

    @property  # type: ignore[override]
    def index(self) -> dict[str, int]:
        index = self._index
        if index is None:
            index = dict(zip(self.keys, range(len(self.keys)), strict=True))
            object.__setattr__(self, "_index", index)
        return index


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

    declarations: Sequence[Any]
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
    # Local directories: id / bare name -> local ordinals (file order).
    local_ids: dict[str, tuple[int, ...]]
    local_names: dict[str, tuple[int, ...]]
    # Flags as rows of `nbytes` bytes (same bit layout as the posting rows), so the
    # workspace's flag bitmaps are spliced from them with byte copies.
    flag_rows: dict[str, bytes]
    # kind -> row of the declarations of that kind in the query pool.
    kind_rows: dict[str, bytes]
    # (lowercased alias, symbol name) of every symbol declaration, in file order.
    aliases: tuple[tuple[str, str], ...]

    def __len__(self) -> int:
        return len(self.declarations)

    @property
    def nbytes(self) -> int:
        return (len(self.declarations) + 7) // 8


def build_segment(declarations: Sequence[Any]) -> Segment:
    """Index the declarations of one file (in file order)."""
    declarations = tuple(declarations)
    width = (len(declarations) + 7) // 8
    terms = _Postings(width)
    subjects = _Postings(width)
    scopes = _Postings(width)
    triggers: dict[str, list[int]] = {}
    subjects_of: list[str | None] = []
    scopes_of: list[str | None] = []
    roles: list[str] = []
    in_pool: list[bool] = []
    is_constraint: list[bool] = []
    supersedes: list[str] = []
    # One pass reads each declaration's facts once (subject and scope are looked up
    # through the type's defaults on every read).
    for local, decl in enumerate(declarations):
        supersedes.extend(decl.relation_targets("supersedes"))
        subject = decl.subject
        scope = decl.scope
        role = decl.runtime_role
        subjects_of.append(subject)
        scopes_of.append(scope)
        roles.append(role)
        active = decl.status not in EXCLUDED_STATUSES
        pooled = active and role != "symbol" and decl.has_capability("searchable")
        constraint = active and role == "constraint"
        in_pool.append(pooled)
        is_constraint.append(constraint)
        if not (pooled or constraint):
            continue
        terms.add_words(lowered_word_tokens(decl.searchable_text()), local)
        if subject is not None:
            subjects.add(subject, local)
        if not constraint:
            continue
        if scope is not None:
            scopes.add(scope, local)
        # Applicability reads the raw guard (no type defaults), like the checker does.
        guard = decl.fields.get("guard")
        if isinstance(guard, dict):
            for phrase in dict.fromkeys(p.lower() for p in field_values(guard.get("when_any"))):
                triggers.setdefault(phrase, []).append(local)
    return _assembled(
        declarations,
        ids=tuple(d.id for d in declarations),
        names=tuple(d.name for d in declarations),
        kinds=tuple(d.kind for d in declarations),
        subjects_of=tuple(subjects_of),
        scopes_of=tuple(scopes_of),
        roles=tuple(roles),
        high_confidence=tuple(str(d.confidence or "") == "high" for d in declarations),
        in_pool=tuple(in_pool),
        is_constraint=tuple(is_constraint),
        terms=terms.table(),
        subjects=subjects.table(),
        constraint_scopes=scopes.table(),
        when_any={phrase: tuple(found) for phrase, found in triggers.items()},
        supersedes=tuple(supersedes),
    )


def _assembled(
    declarations: Sequence[Any], rows: dict[str, Any] | None = None, **facts: Any
) -> Segment:
    """A segment of `declarations` from their per-declaration facts and postings
    (`Segment`'s fields of those names); the directories, the flag and kind rows and
    the aliases are derived here. `rows`, when given, holds the flag rows and kind rows
    already made (`flag_rows`, `kind_rows`), as `cut_segment` cuts them, and may hold
    the aliases."""
    if rows is None:
        nbytes = (len(declarations) + 7) // 8
        in_pool, roles = facts["in_pool"], facts["roles"]
        by_kind: dict[str, list[int]] = {}
        for local, kind in enumerate(facts["kinds"]):
            if in_pool[local]:
                by_kind.setdefault(kind, []).append(local)
        rows = {
            "flag_rows": {
                "in_pool": _row(nbytes, in_pool),
                "is_constraint": _row(nbytes, facts["is_constraint"]),
                "high_confidence": _row(nbytes, facts["high_confidence"]),
                "question": _row(nbytes, [role == "question" for role in roles]),
            },
            "kind_rows": {
                kind: _row(nbytes, members, ordinals=True) for kind, members in by_kind.items()
            },
        }
    if "aliases" not in rows:
        rows = {**rows, "aliases": _aliases(declarations, facts["roles"])}
    return Segment(
        declarations=declarations,
        **facts,
        **rows,
        local_ids=_local_directory(facts["ids"]),
        local_names=_local_directory(facts["names"]),
    )


def cut_segment(
    segment: Segment, kept: Sequence[int], declarations: Sequence[Any] | None = None
) -> Segment:
    """The segment `build_segment` makes of some of `segment`'s declarations (`kept`:
    their local ordinals, increasing), taken from `segment` instead of read again: the
    posting rows keep the columns of `kept` (keys left with no declaration go), and
    the per-declaration facts are selected. A posting table's keys keep their order in
    `segment`, which no answer depends on. `declarations`, when given, are those
    declarations as a run of a workspace (kept as they are: none is read here).

    Every bitmap of the segment (its three tables' rows, its flag and kind rows) has
    the same layout, so all are cut together: one unpack, selection and pack for the
    file rather than one per table and a Python pass per flag. A role-limited view of
    a workspace whose every file holds a restricted declaration cuts every segment.
    """
    import numpy as np

    if declarations is None:
        declarations = tuple(segment.declarations[o] for o in kept)
    nbytes = (len(kept) + 7) // 8
    width = segment.nbytes
    tables = [getattr(segment, name) for name in _POSTINGS]
    flags, kinds = segment.flag_rows, segment.kind_rows
    parts = [t.rows for t in tables]
    if (
        not kept
        or any(t.rows and t.width != width for t in tables)
        or any(len(row) != width for row in (*flags.values(), *kinds.values()))
    ):
        return _cut_apart(segment, kept, declarations)
    joined = b"".join([*parts, *flags.values(), *kinds.values()])
    bits = np.unpackbits(np.frombuffer(joined, np.uint8).reshape(-1, width), axis=1)
    packed = np.packbits(bits[:, np.asarray(kept, dtype=np.intp)], axis=1)
    at = 0
    cut: dict[str, PostingTable] = {}
    for name, postings, part in zip(_POSTINGS, tables, parts, strict=True):
        count = len(part) // width
        if not count:
            cut[name] = PostingTable(keys=(), rows=b"", width=nbytes, index={})
            continue
        mine = packed[at : at + count]
        at += count
        live = mine.any(axis=1)
        keys = tuple(compress(postings.passing_keys(), live.tolist()))
        cut[name] = LazyPostingTable(keys, mine[live].tobytes(), nbytes)
    flag_rows = {}
    for name in flags:
        flag_rows[name] = packed[at].tobytes()
        at += 1
    pick = _picker(kept)
    picked = {name: pick(getattr(segment, name)) for name in _PER_DECLARATION}
    kind_cut = {}
    for kind in kinds:
        kind_cut[kind] = packed[at]
        at += 1
    # In the order `build_segment` meets them: by each kind's first kept member.
    in_pool = picked["in_pool"]
    kinds_of = picked["kinds"]
    met = dict.fromkeys(kind for kind, pool in zip(kinds_of, in_pool, strict=True) if pool)
    kind_rows = {kind: kind_cut[kind].tobytes() for kind in met}
    made: dict[str, Any] = {"flag_rows": flag_rows, "kind_rows": kind_rows}
    left = _left_out(segment, kept)
    if all(segment.roles[o] != "symbol" for o in left):
        # The same symbols in the same order: their aliases, read from no declaration.
        made["aliases"] = segment.aliases
    return _assembled(
        declarations,
        made,
        **picked,
        **cut,
        when_any=_moved_triggers(segment, kept),
        supersedes=_kept_supersedes(segment, left, declarations),
    )


def _left_out(segment: Segment, kept: Sequence[int]) -> set[int]:
    return set(range(len(segment.declarations))).difference(kept)


def _picker(kept: Sequence[int]) -> Any:
    """A function giving the items of a sequence at `kept`, as a tuple (in C)."""
    if len(kept) > 1:
        return itemgetter(*kept)
    if kept:
        only = kept[0]
        return lambda values: (values[only],)
    return lambda values: ()


def _moved_triggers(segment: Segment, kept: Sequence[int]) -> dict[str, tuple[int, ...]]:
    new_local = {old: new for new, old in enumerate(kept)}
    when_any = {}
    for phrase, found in segment.when_any.items():
        moved = tuple(new_local[o] for o in found if o in new_local)
        if moved:
            when_any[phrase] = moved
    return when_any


def _kept_supersedes(
    segment: Segment, left: set[int], declarations: Sequence[Any]
) -> tuple[str, ...]:
    # The segment's targets are its declarations' in file order: when the left-out ones
    # (`left`) name none, the kept ones name them all, and no declaration is read for them.
    if not segment.supersedes or not any(
        _passing(segment.declarations, o).relation_targets("supersedes") for o in left
    ):
        return tuple(segment.supersedes)
    return tuple(
        target
        for at in range(len(declarations))
        for target in _passing(declarations, at).relation_targets("supersedes")
    )


def _cut_apart(segment: Segment, kept: Sequence[int], declarations: Sequence[Any]) -> Segment:
    """`cut_segment` one table at a time, for a segment whose tables differ in width."""
    import numpy as np

    columns = np.asarray(kept, dtype=np.intp)
    nbytes = (len(kept) + 7) // 8

    def table(postings: PostingTable) -> PostingTable:
        if not postings.rows or not len(kept):
            return PostingTable(keys=(), rows=b"", width=nbytes, index={})
        rows = np.frombuffer(postings.rows, np.uint8).reshape(-1, postings.width)
        packed = np.packbits(np.unpackbits(rows, axis=1)[:, columns], axis=1)
        live = packed.any(axis=1)
        keys = tuple(compress(postings.passing_keys(), live.tolist()))
        return LazyPostingTable(keys, packed[live].tobytes(), nbytes)

    pick = _picker(kept)
    return _assembled(
        declarations,
        **{name: pick(getattr(segment, name)) for name in _PER_DECLARATION},
        **{name: table(getattr(segment, name)) for name in _POSTINGS},
        when_any=_moved_triggers(segment, kept),
        supersedes=_kept_supersedes(segment, _left_out(segment, kept), declarations),
    )


def _passing(declarations: Sequence[Any], at: int) -> Any:
    """`declarations[at]`, or a stand-in that nothing keeps where a restored run lends
    one: a cut reads some declarations once, and need not make them."""
    passing = getattr(declarations, "passing_at", None)
    return passing(at) if passing is not None else declarations[at]


# A segment's fields of one value per declaration (in file order), and its postings.
_PER_DECLARATION = (
    "ids",
    "names",
    "kinds",
    "subjects_of",
    "scopes_of",
    "roles",
    "high_confidence",
    "in_pool",
    "is_constraint",
)
_POSTINGS = ("terms", "subjects", "constraint_scopes")


def _row(nbytes: int, values: Sequence[Any], *, ordinals: bool = False) -> bytes:
    """A bitmap row: flags per local ordinal, or (`ordinals`) the ordinals that are set."""
    buffer = bytearray(nbytes)
    for o in values if ordinals else (o for o, flag in enumerate(values) if flag):
        buffer[o >> 3] |= 0x80 >> (o & 7)
    return bytes(buffer)


# `(o,)` for each local ordinal of a file of up to 4,096 declarations, shared by every
# directory: one tuple a key held ~110 MiB at 1M declarations (ids and names).
_SINGLES = tuple(zip(range(4096)))


def _local_directory(keys: Sequence[str]) -> dict[str, tuple[int, ...]]:
    # Most files name each declaration once: then every key has one ordinal, and the
    # directory is made in C.
    singles = _SINGLES if len(keys) <= len(_SINGLES) else tuple(zip(range(len(keys))))
    unique = dict(zip(keys, singles, strict=False))  # `singles` may be the longer
    if len(unique) == len(keys):
        return unique
    found: dict[str, list[int]] = {}
    for local, key in enumerate(keys):
        found.setdefault(key, []).append(local)
    return {key: tuple(locals_) for key, locals_ in found.items()}


def _aliases(declarations: Sequence[Any], roles: Sequence[str]) -> tuple[tuple[str, str], ...]:
    # Exactly what Workspace.alias_map reads: symbols of any status, list-valued aliases.
    # `roles`: the declarations' runtime roles, known already (a cut reads no field for
    # them: a type with a role field would decode every declaration's).
    out: list[tuple[str, str]] = []
    if len(declarations) != len(roles):
        raise ValueError("roles of another number of declarations")
    for at in (at for at, role in enumerate(roles) if role == "symbol"):
        decl = declarations[at]  # only a symbol is read: a restored run makes no other
        aliases = decl.fields.get("aliases", [])
        if isinstance(aliases, list):
            out.extend((str(alias).lower(), decl.name) for alias in aliases)
    return tuple(out)


class _Postings:
    """One posting table under construction: key -> int bitmap of local ordinals
    (local ordinal `o` is bit `top - o`, so the bitmap's big-endian bytes are its row)."""

    __slots__ = ("width", "top", "bits")

    def __init__(self, width: int) -> None:
        self.width = width
        self.top = width * 8 - 1
        self.bits: dict[str, int] = {}

    def add(self, key: str, local: int) -> None:
        self.bits[key] = self.bits.get(key, 0) | 1 << (self.top - local)

    def add_words(self, words: Iterable[str], local: int) -> None:
        """Post `local` under each of `words` (a declaration's, repeats included)."""
        bit = 1 << (self.top - local)
        bits = self.bits
        get = bits.get
        for key in set(words):
            bits[key] = get(key, 0) | bit

    def table(self) -> PostingTable:
        width = self.width
        rows = b"".join([bits.to_bytes(width, "big") for bits in self.bits.values()])
        # Interned, so all segments share one string object per distinct key.
        keys = tuple(map(sys.intern, self.bits))
        return PostingTable(
            keys=keys,
            rows=rows,
            width=width,
            index=dict(zip(keys, range(len(keys)), strict=True)),
        )
