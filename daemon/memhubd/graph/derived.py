"""Read-only triples derived from governed memory: each declaration's subject and the
relations it declares (`supports`, `depends_on`, `part_of`, `supersedes`, ...).

Computed once per whole workspace (one per snapshot) and kept only while that
workspace lives, so reloads never grow the cache. Role hiding is the caller's job:
every fact carries its declaration id to filter on. Nothing here writes anything.
"""

from __future__ import annotations

import threading
import weakref
from datetime import UTC, date, datetime
from typing import Any

from memhub_protocol.times import parse_iso
from memhubd.graph.facts import Fact, derived_triple_id
from memhubd.model.workspace import EXCLUDED_STATUSES

SUBJECT_PREDICATE = "about"

_CACHE: weakref.WeakKeyDictionary[Any, tuple[Fact, ...]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def epoch_of(value: Any) -> int | None:
    """Epoch seconds of a lifecycle date or date-time (UTC unless it says); None if not one."""
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    else:
        try:
            moment = parse_iso(str(value))
        except ValueError:
            return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp())


def end_of(value: Any) -> int | None:
    """Epoch seconds at which a `valid_until` ends the period (exclusive): a date ends
    with its day, at the next UTC midnight, as memdsl counts a memory expired only once
    its `valid_until` day is past (lint's stale check); a date-time ends at itself."""
    end = epoch_of(value)
    if end is None:
        return None
    alone = (
        not any(joint in value.strip() for joint in "Tt ")
        if isinstance(value, str)
        else isinstance(value, date) and not isinstance(value, datetime)
    )
    return end + _DAY_S if alone else end


_DAY_S = 86400


def _facts_of(declaration: Any, superseded: frozenset[str]) -> list[Fact]:
    lifecycle = declaration.lifecycle
    retired = (
        declaration.status in EXCLUDED_STATUSES
        or declaration.id in superseded
        or declaration.name in superseded
    )
    common = {
        "valid_from": epoch_of(lifecycle.get("as_of")),
        "valid_to": end_of(lifecycle.get("valid_until")),
        "source_declaration": declaration.id,
        "retired": retired,
        "file": declaration.file,
        "line": declaration.line,
    }
    edges: list[tuple[str, str]] = []
    if declaration.subject:
        edges.append((SUBJECT_PREDICATE, declaration.subject))
    for relation, targets in declaration.relations().items():
        edges.extend((relation, target) for target in targets)
    subject = declaration.id
    return [
        Fact(
            id=derived_triple_id(declaration.id, subject, predicate, obj),
            subject=subject,
            predicate=predicate,
            object=obj,
            **common,
        )
        for predicate, obj in dict.fromkeys(edges)
    ]


def derived_facts(workspace: Any) -> tuple[Fact, ...]:
    """Every derived fact of a whole workspace, in declaration order (cached per workspace).

    The cached value holds strings only, never the workspace: a value referring to its
    key would keep every snapshot alive.
    """
    with _LOCK:
        cached = _CACHE.get(workspace)
    if cached is not None:
        return cached
    superseded = workspace.superseded_ids()
    facts: list[Fact] = []
    seen: set[str] = set()
    for declaration in workspace.declarations:
        for fact in _facts_of(declaration, superseded):
            if fact.id not in seen:  # a duplicated declaration id states its edges once
                seen.add(fact.id)
                facts.append(fact)
    value = tuple(facts)
    with _LOCK:
        return _CACHE.setdefault(workspace, value)


def cached_workspaces() -> int:
    """How many workspaces have derived facts cached (for tests of the bound)."""
    with _LOCK:
        return len(_CACHE)
