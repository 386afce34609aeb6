"""Declaration: one typed memory and the properties derived from its fields (spec §1.5).

Declarations are immutable once built, so derived values that queries read over and
over (id, status, role, claim, relations, searchable text) are computed once, lazily.
Nothing here looks at other declarations; cross-declaration lookups live in Workspace.
"""

from __future__ import annotations

import marshal
import re
import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate, count
from operator import add
from typing import Any

from memhubd.lang.tree import (
    SHARED_LENGTH,
    FieldPath,
    Position,
    RawDeclaration,
    SharedRawDeclaration,
)
from memhubd.schema import TypeDescriptor

RELATION_FIELDS: frozenset[str] = frozenset(
    {
        "supports",
        "refines",
        "depends_on",
        "part_of",
        "supersedes",
        "conflicts_with",
        "derived_from",
        "related_to",
        "revision_of",
    }
)

# Raw fields tried, in order, when the type names no usable claim field.
_FALLBACK_CLAIM_FIELDS = ("claim", "rule", "decision", "pattern", "summary")
# Raw fields (type defaults not consulted) that feed the searchable text.
_SEARCHABLE_RAW_FIELDS = ("aliases", "tags", "facets", "exceptions", "canonical_name", "about")
_LIFECYCLE_KEYS = ("status", "as_of", "valid_until")
_NO_RELATIONS: tuple[tuple[str, tuple[str, ...]], ...] = ()
# Field names whose absence from a saved field block answers without decoding it.
_ACCESS_WORDS = re.compile(rb"access")  # `access_policy` and the legacy `access`
_RELATION_WORDS = re.compile(
    b"|".join([b"relations", *(name.encode() for name in sorted(RELATION_FIELDS))])
)
_NO_CAPABILITIES: frozenset[str] = frozenset()
_MISSING: Any = object()


class Declaration:
    """A `TYPE NAME { ... }` with its type resolved (`type_descriptor` is None if unknown).

    Attributes mirror memdsl's; `column` and `positions` are additions. Treat
    `fields` as read-only: cached derived values assume it never changes.
    """

    __slots__ = (
        "kind",
        "name",
        "fields",
        "file",
        "line",
        "module",
        "type_descriptor",
        "_column",
        "_positions",
        # Lazily filled caches; None means "not computed yet" (no computed value is None).
        "_id",
        "_status",
        "_role",
        "_claim",
        "_relations",
        "_text",
    )

    def __init__(
        self,
        kind: str,
        name: str,
        fields: dict[str, Any],
        file: str,
        line: int,
        module: str | None = None,
        type_descriptor: TypeDescriptor | None = None,
        column: int = 1,
        positions: dict[FieldPath, Position] | None = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.fields = fields
        self.file = file
        self.line = line
        self.module = module
        self.type_descriptor = type_descriptor
        self._column = column
        # A dict given by the caller, or the parsed declaration to ask on demand.
        self._positions: dict[FieldPath, Position] | RawDeclaration | None = positions
        self._id: str | None = None
        self._status: str | None = None
        self._role: str | None = None
        self._claim: str | None = None
        self._relations: tuple[tuple[str, tuple[str, ...]], ...] | None = None
        self._text: str | None = None

    @classmethod
    def from_raw(cls, raw: RawDeclaration, descriptor: TypeDescriptor | None) -> Declaration:
        """Wrap a parsed declaration, sharing its fields.

        Column and positions stay with `raw` until asked for: the parser may only
        compute them on demand, and most declarations never need them.
        """
        fields = raw.fields
        if type(raw) is not SharedRawDeclaration:  # the fast parser's are shared already
            # The parsed declaration keeps the shared copy too, so only one copy stays.
            fields = raw.fields = _shared(fields)
        kind = sys.intern(raw.kind)
        decl = cls(kind, raw.name, fields, raw.file, raw.line, raw.module, descriptor, 0)
        decl._positions = raw
        return decl

    # ---- identity -------------------------------------------------------

    @property
    def id(self) -> str:
        ident = self._id
        if ident is None:
            ident = self._id = f"{self.kind}:{self.name}"
        return ident

    @property
    def type_name(self) -> str:
        return self.kind

    @property
    def column(self) -> int:
        """1-based column of the type token (1 when unknown)."""
        if self._column:
            return self._column
        source = self._positions
        if source is not None and not isinstance(source, dict):
            return source.column
        return 1

    @property
    def positions(self) -> dict[FieldPath, Position]:
        """Where each key (by path, e.g. `("guard", "deny_any")`) was written."""
        source = self._positions
        if source is None:
            return {}
        if isinstance(source, dict):
            return source
        return source.positions

    def position_of(self, *path: str) -> Position:
        """Where the key at `path` was written, or the declaration's own position."""
        found = self.positions.get(path)
        return found if found is not None else Position(self.file, self.line, self.column)

    # ---- field access ---------------------------------------------------

    def field(self, name: str, default: Any = None) -> Any:
        """The field's own value, else the type's default, else `default`."""
        value = self.fields.get(name, _MISSING)
        if value is not _MISSING:
            return value
        descriptor = self.type_descriptor
        if descriptor is not None:
            return descriptor.defaults.get(name, default)
        return default

    def _text_field(self, name: str) -> str | None:
        value = self.fields.get(name, _MISSING)
        if value is _MISSING:
            value = self.field(name)
        return None if value is None else str(value)

    @property
    def status(self) -> str:
        """Nested `lifecycle.status`, else `status` (own or default), else 'active'."""
        if self._status is not None:
            return self._status
        lifecycle = self.fields.get("lifecycle")
        if isinstance(lifecycle, dict) and "status" in lifecycle:
            status = str(lifecycle["status"])
        else:
            status = str(self.field("status", "active"))
        self._status = status
        return status

    @property
    def force(self) -> str | None:
        return self._text_field("force")

    @property
    def subject(self) -> str | None:
        return self._text_field("subject")

    @property
    def scope(self) -> str | None:
        return self._text_field("scope")

    @property
    def confidence(self) -> Any:
        return self.field("confidence")

    @property
    def lifecycle(self) -> dict[str, Any]:
        """The nested block, completed from top-level fields and defaults; always has status."""
        nested = self.fields.get("lifecycle")
        result = dict(nested) if isinstance(nested, dict) else {}
        for key in _LIFECYCLE_KEYS:
            if key not in result:
                value = self.field(key)
                if value is not None:
                    result[key] = value
        if "status" not in result:
            result["status"] = "active"
        return result

    @property
    def access_policy(self) -> dict[str, Any]:
        """`access_policy` (own or default), else legacy `access`, when it is a block; else {}."""
        value = self.field("access_policy", self.field("access"))
        return dict(value) if isinstance(value, dict) else {}

    @property
    def evidence(self) -> dict[str, Any] | None:
        value = self.field("evidence")
        return value if isinstance(value, dict) else None

    # ---- type-driven ----------------------------------------------------

    @property
    def runtime_role(self) -> str:
        role = self._role
        if role is None:
            descriptor = self.type_descriptor
            if descriptor is None:
                role = "unknown"
            elif not descriptor.role_field:  # the type's role, whatever the fields say
                role = descriptor.runtime_role  # (a restored declaration's stay saved)
            else:
                role = descriptor.role_for(self.fields)
            self._role = role
        return role

    @property
    def capabilities(self) -> frozenset[str]:
        descriptor = self.type_descriptor
        return _NO_CAPABILITIES if descriptor is None else descriptor.capabilities

    def has_capability(self, name: str) -> bool:
        descriptor = self.type_descriptor
        return descriptor is not None and name in descriptor.capabilities

    @property
    def claim_text(self) -> str:
        """The type's claim field, else the first string among the usual claim fields."""
        if self._claim is not None:
            return self._claim
        claim = ""
        if self.type_descriptor is not None:
            claim = self.type_descriptor.claim_for(self.fields)
        if not claim:
            for key in _FALLBACK_CLAIM_FIELDS:
                value = self.fields.get(key)
                if isinstance(value, str):
                    claim = value
                    break
        self._claim = claim
        return claim

    # ---- relations and search -------------------------------------------

    def _relation_pairs(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        if self._relations is not None:
            return self._relations
        fields = self.fields
        block = self.field("relations")
        if not isinstance(block, dict):
            if fields.keys().isdisjoint(RELATION_FIELDS):  # the common case: none at all
                self._relations = _NO_RELATIONS
                return _NO_RELATIONS
            block = {}
        merged: dict[str, list[str]] = {}
        sources = (fields, block)
        for source in sources:
            for key, value in source.items():
                if key in RELATION_FIELDS:
                    targets = value if isinstance(value, list) else (value,)
                    merged.setdefault(key, []).extend(str(target) for target in targets)
        pairs = tuple((k, tuple(v)) for k, v in merged.items()) if merged else _NO_RELATIONS
        self._relations = pairs
        return pairs

    def relations(self) -> dict[str, list[str]]:
        """Relation name -> targets: top-level fields first, then the `relations` block."""
        return {name: list(targets) for name, targets in self._relation_pairs()}

    def relation_targets(self, name: str) -> tuple[str, ...]:
        """The targets of one relation, without building the whole mapping."""
        for key, targets in self._relation_pairs():
            if key == name:
                return targets
        return ()

    def searchable_text(self) -> str:
        """Lowercased text that query terms are matched against (spec §1.5)."""
        text = self._text
        if text is None:
            text = self._text = " ".join(self._searchable_parts()).lower()
        return text

    def _searchable_parts(self) -> list[str]:
        parts = [self.name.replace(".", " "), self.claim_text]
        subject = self.subject
        if subject:
            parts.append(subject.replace(".", " "))
        fields = self.fields
        for key in _SEARCHABLE_RAW_FIELDS:
            value = fields.get(key)
            if value is not None:  # most are absent: no call for them
                _extend_text(parts, value)
        if self.type_descriptor is not None:
            for key in self.type_descriptor.search_fields:
                _extend_text(parts, self.field(key))
        return parts

    # ---- object protocol ------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Declaration):
            return NotImplemented
        return (
            self.kind == other.kind
            and self.name == other.name
            and self.fields == other.fields
            and self.file == other.file
            and self.line == other.line
            and self.module == other.module
            and self.type_descriptor == other.type_descriptor
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Declaration(kind={self.kind!r}, name={self.name!r}, fields={self.fields!r}, "
            f"file={self.file!r}, line={self.line!r}, module={self.module!r})"
        )


class RestoredDeclaration(Declaration):
    """A declaration restored from the persisted parse cache: its fields stay in their
    saved (`marshal`) form until something reads them, so a restart builds 100k of these
    without decoding 100k field blocks; most are never asked for their fields before the
    first answer. It is a `Declaration` in every other respect.

    `fields` is an unset slot until then; reading it lands in `__getattr__`, which takes
    the fields from the parsed declaration `raw` (a `RestoredRaw`, which decodes them
    once and keeps them), so both share one dict, as `from_raw` makes them.
    """

    __slots__ = ()

    @classmethod
    def restore(cls, raw: Any, descriptor: TypeDescriptor | None) -> RestoredDeclaration:
        """Wrap `raw`, whose `fields` are read from it on first access. Its keys and short
        values were interned when saved, and `marshal` interns them again when loading."""
        decl = cls.__new__(cls)
        decl.kind = raw.kind
        decl.name = raw.name
        decl.file = raw.file
        decl.line = raw.line
        decl.module = raw.module
        decl.type_descriptor = descriptor
        decl._column = 0
        decl._positions = raw
        decl._id = decl._status = decl._role = decl._claim = decl._text = None
        decl._relations = None
        return decl

    def __getattr__(self, name: str) -> Any:
        # Only called for an attribute not set: `fields` before its first read.
        if name != "fields":
            raise AttributeError(name)
        fields = self.fields = self._positions.fields  # type: ignore[union-attr]
        return fields

    def _saved_without(self, words: re.Pattern[bytes]) -> bool:
        """Whether the fields are still saved and name none of `words` (field names,
        one pattern).

        A `marshal` stream writes each string in full at least once (a back-reference
        only points to one already written), so saved fields whose bytes do not hold a
        field's name do not have that field: what the type's defaults give is the
        answer, without decoding the block. Bytes that hold the name (in a key, or in
        some text) are decoded and read as usual.
        """
        saved = getattr(self._positions, "saved_fields", None)
        return saved is not None and words.search(saved) is None

    @property
    def access_policy(self) -> dict[str, Any]:
        """As `Declaration.access_policy`, without decoding fields that cannot hold one:
        every role-limited view reads every declaration's policy, and decoding each
        field block for it held 77 MiB at 100k declarations."""
        if not self._saved_without(_ACCESS_WORDS):
            return super().access_policy
        return default_policy(self.type_descriptor)

    def _relation_pairs(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        # A view's index reads every kept declaration's `supersedes`: the same shortcut.
        if self._relations is None and self._saved_without(_RELATION_WORDS):
            descriptor = self.type_descriptor
            if descriptor is None or not isinstance(descriptor.defaults.get("relations"), dict):
                self._relations = _NO_RELATIONS
                return _NO_RELATIONS
        return super()._relation_pairs()


def default_policy(descriptor: TypeDescriptor | None) -> dict[str, Any]:
    """The access policy a declaration of this type has when its fields name none."""
    value = (
        descriptor.defaults.get("access_policy", descriptor.defaults.get("access"))
        if descriptor is not None
        else None
    )
    return dict(value) if isinstance(value, dict) else {}


class RestoredRaw(RawDeclaration):
    """A parsed declaration restored from the parse cache, its fields kept as the
    `marshal` bytes they were saved as until first read (see `RestoredDeclaration`)."""

    __slots__ = ("_saved_fields",)

    def __init__(
        self,
        kind: str,
        name: str,
        saved_fields: bytes | None,
        file: str,
        line: int,
        module: str | None,
        column: int,
        packed: Any,
        source: Any,
        index: int,
    ) -> None:
        # RawDeclaration.__init__ would set `fields`: every other slot is set here.
        self.kind = kind
        self.name = name
        self.file = file
        self.line = line
        self.module = module
        self._column = column
        self._packed = packed
        self._given = None
        self._source = source
        self._index = index
        self._saved_fields = saved_fields

    def __getattr__(self, name: str) -> Any:
        if name != "fields":
            raise AttributeError(name)
        saved = self._saved_fields
        if saved is None:  # another thread decoded them meanwhile (and set them first)
            return self.fields
        fields = marshal.loads(saved)
        if type(fields) is not dict:
            # Sealed by this daemon, so never expected; but never served as fields.
            raise ValueError(f"saved fields of {self.kind}:{self.name} are not a block")
        self.fields = fields
        self._saved_fields = None  # decoded once: keep one copy, not both
        return fields

    @property
    def saved_fields(self) -> bytes | None:
        """The fields in their saved form while not decoded (the cache writes them back
        unchanged), else None."""
        return self._saved_fields


class RestoredFile:
    """One file's declarations as the parse cache saved them (by column), each made
    (`RestoredRaw` and `RestoredDeclaration`) the first time it is read, so that a
    restart builds none of them before its first answer. A declaration is made once:
    every reader gets the same objects. Seen through `RestoredDeclarations` (typed) and
    `RestoredRaws` (parsed); once all are made, the saved columns are dropped."""

    __slots__ = (
        "path", "size", "columns", "made_all", "_kinds", "_names", "_descriptors", "_source",
        "_made",
    )  # fmt: skip

    def __init__(
        self,
        path: str,
        kinds: tuple[str, ...],
        names: tuple[str, ...],
        columns: tuple[Any, ...],
        descriptors: dict[str, Any],
        source: Any,
    ) -> None:
        lines, modules, positions, packeds, fields = columns
        self.size = len(kinds)
        if not self.size == len(names) == len(lines) == len(modules) == len(fields):
            raise ValueError("declaration columns of different sizes")
        if not len(positions) == len(packeds) == self.size:
            raise ValueError("declaration columns of different sizes")
        self.path = path
        # (lines, modules, columns, packed positions, fields' marshal bytes), as saved.
        self.columns: tuple[Any, ...] | None = columns
        # (parsed, typed) tuples once every declaration is made (iterated in C).
        self.made_all: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None
        self._kinds = kinds
        self._names = names
        self._descriptors = descriptors
        self._source = source
        self._made: dict[int, tuple[RestoredRaw, RestoredDeclaration]] = {}

    def made(self, index: int) -> tuple[RestoredRaw, RestoredDeclaration]:
        """(parsed, typed) declaration number `index` (0 <= index < size)."""
        found = self._made.get(index)
        if found is not None:
            return found
        columns = self.columns
        if columns is None:  # all made meanwhile, by another thread
            return self._made[index]
        lines, modules, positions, packeds, fields = columns
        kind, column = self._kinds[index], positions[index]
        if column is None:
            raw = RestoredRaw(
                kind, self._names[index], fields[index], self.path, lines[index],
                modules[index], 0, None, self._source, index,
            )  # fmt: skip
        else:
            packed = packeds[index]
            raw = RestoredRaw(
                kind, self._names[index], fields[index], self.path, lines[index],
                modules[index], column, None if packed is None else array("l", packed), None,
                index,
            )  # fmt: skip
        pair = (raw, RestoredDeclaration.restore(raw, self._descriptors[kind]))
        # setdefault is atomic: two threads making the same declaration keep one pair.
        found = self._made.setdefault(index, pair)
        if len(self._made) == self.size and self.columns is not None:
            made = [self._made[i] for i in range(self.size)]
            self.made_all = (tuple(p[0] for p in made), tuple(p[1] for p in made))
            self.columns = None  # every declaration made: the saved form is theirs now
        return found

    def policy_unmade(self, index: int) -> dict[str, Any] | None:
        """The access policy of declaration number `index` when it can be told without
        making the declaration: it is not made yet, and its saved fields either name none
        (its type's defaults give it, as `RestoredDeclaration.access_policy` reads it) or
        are decoded for a stand-in that nothing keeps (`passing`). None otherwise: make
        it and read its `access_policy`. A role-limited view reads every declaration's
        policy; making them all for it held 41 MiB at 100k declarations."""
        columns = self.columns
        if columns is None or index in self._made:
            return None
        saved = columns[4][index]
        if saved is None:
            return None
        if _ACCESS_WORDS.search(saved) is None:
            return default_policy(self._descriptors[self._kinds[index]])
        stand_in = self.passing(index)  # its fields decoded, kept nowhere
        return None if stand_in is None else stand_in.access_policy

    def unsure_policies(self) -> list[int] | None:
        """The numbers of the declarations whose access policy may not be their type's
        default (made already, not saved as a block, or saved fields naming `access`),
        from one scan of the saved fields in C: a role-limited view then reads only those
        of a file. None once every declaration is made."""
        columns = self.columns
        if columns is None:
            return None
        fields = columns[4]
        unsure = set(self._made)
        blocks = fields
        if None in fields:  # not saved as a block: read as made
            unsure.update(n for n, saved in enumerate(fields) if saved is None)
            blocks = [b"" if saved is None else saved for saved in fields]
        # A NUL between blocks: no match of the word runs from one block into the next.
        # Block n starts after the n blocks and n NULs before it (C-level iteration:
        # a generator here was a quarter of a 1M view's scan).
        starts = list(map(add, accumulate(map(len, blocks), initial=0), count()))
        for found in _ACCESS_WORDS.finditer(b"\0".join(blocks)):
            unsure.add(bisect_right(starts, found.start()) - 1)
        return sorted(unsure)

    def defaults_kept(
        self, keep_policy: Callable[[dict[str, Any]], bool], memo: dict[int, bool]
    ) -> bool:
        """Whether `keep_policy` keeps the default policy of every type this file's
        declarations are of, remembered in `memo` by type: the files of one registry
        share their types, and a view of 1M declarations asked it of every type of each
        of 20,000 files (0.8 s). `memo` must not outlive the types it was filled for
        (it is keyed by their identity)."""
        types = self._descriptors.values()
        try:
            return all(map(memo.__getitem__, map(id, types)))
        except KeyError:  # a type met for the first time
            for descriptor in types:
                if id(descriptor) not in memo:
                    memo[id(descriptor)] = keep_policy(default_policy(descriptor))
            return all(map(memo.__getitem__, map(id, types)))

    def passing(self, index: int) -> Declaration | None:
        """A typed declaration for number `index` that nothing keeps: its fields decoded
        from the saved form and stored nowhere, so a reader passing over every declaration
        once (lint) leaves none made or decoded behind. None once it has been made (read
        that one instead), or when its saved form is not a block."""
        columns = self.columns
        if columns is None or index in self._made:
            return None
        lines, modules, _, _, fields = columns
        saved = fields[index]
        decoded = marshal.loads(saved) if saved is not None else None
        if type(decoded) is not dict:
            return None
        kind = self._kinds[index]
        return Declaration(
            kind, self._names[index], decoded, self.path, lines[index], modules[index],
            self._descriptors[kind],
        )  # fmt: skip


class _ListLike(Sequence[Any]):
    """A read-only sequence of declarations equal to a list of the same ones."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"


class _RestoredView(_ListLike):
    """One side of a `RestoredFile`'s declarations, as a read-only sequence."""

    __slots__ = ("file",)
    _side = 0

    def __init__(self, file: RestoredFile) -> None:
        self.file = file

    def __len__(self) -> int:
        return self.file.size

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.file.size))]
        if index < 0:
            index += self.file.size
        if not 0 <= index < self.file.size:
            raise IndexError(index)
        return self.file.made(index)[self._side]

    def __iter__(self) -> Iterator[Any]:
        made_all = self.file.made_all
        if made_all is not None:
            return iter(made_all[self._side])
        return self._making()

    def passing_at(self, index: int) -> Any:
        """Declaration number `index`: a stand-in that nothing keeps while it is not
        made (`RestoredFile.passing`), for a reader that looks at it once."""
        if self._side == 1:
            stand_in = self.file.passing(index)
            if stand_in is not None:
                return stand_in
        return self[index]

    def _making(self) -> Iterator[Any]:
        made, side = self.file.made, self._side
        for index in range(self.file.size):
            yield made(index)[side]


class RestoredDeclarations(_RestoredView):
    """A restored file's typed declarations (what a parse's tuple of them holds)."""

    __slots__ = ()
    _side = 1


class RestoredSubset(_ListLike):
    """Some of a restored file's typed declarations (`ordinals`: their numbers in the
    file, increasing), each made when first read as `RestoredDeclarations` makes them,
    and the very objects it makes: a role-limited view's run of a file it may read only
    part of, made without making the declarations it keeps."""

    __slots__ = ("file", "ordinals")

    def __init__(self, file: RestoredFile, ordinals: tuple[int, ...]) -> None:
        self.file = file
        self.ordinals = ordinals

    def __len__(self) -> int:
        return len(self.ordinals)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self.file.made(o)[1] for o in self.ordinals[index]]
        return self.file.made(self.ordinals[index])[1]

    def passing_at(self, index: int) -> Any:
        """The `index`th declaration kept: a stand-in while not made (see
        `RestoredDeclarations.passing_at`)."""
        stand_in = self.file.passing(self.ordinals[index])
        return stand_in if stand_in is not None else self[index]

    def __iter__(self) -> Iterator[Any]:
        made_all = self.file.made_all
        if made_all is not None:
            typed = made_all[1]
            return iter([typed[o] for o in self.ordinals])
        made = self.file.made
        return (made(o)[1] for o in self.ordinals)


class RestoredRaws(_RestoredView):
    """A restored file's parsed declarations (what a `Document` holds)."""

    __slots__ = ()
    _side = 0


def _extend_text(parts: list[str], value: Any) -> None:
    if isinstance(value, list):
        parts.extend(str(item) for item in value)
    elif isinstance(value, str):
        parts.append(value)


def _shared(value: Any) -> Any:
    """`value` with its dict keys and short strings interned, nested dicts and lists
    copied (never changed in place: another thread may be reading them)."""
    kind = type(value)
    if kind is dict:
        return _shared_block(value)
    if kind is list:
        return _shared_list(value)
    if kind is str and len(value) <= SHARED_LENGTH:
        return sys.intern(value)
    return value


# `_shared` of a block and of a list, the type of each item tested here rather than in
# a call per item: every parsed declaration's fields pass through them once.


def _shared_block(block: dict[Any, Any]) -> dict[Any, Any]:
    intern = sys.intern
    out = {}
    for key, item in block.items():
        kind = type(item)
        if kind is str:
            if len(item) <= SHARED_LENGTH:
                item = intern(item)
        elif kind is dict:
            item = _shared_block(item)
        elif kind is list:
            item = _shared_list(item)
        out[intern(key) if type(key) is str else key] = item
    return out


def _shared_list(items: list[Any]) -> list[Any]:
    intern = sys.intern
    out = []
    for item in items:
        kind = type(item)
        if kind is str:
            if len(item) <= SHARED_LENGTH:
                item = intern(item)
        elif kind is dict:
            item = _shared_block(item)
        elif kind is list:
            item = _shared_list(item)
        out.append(item)
    return out
