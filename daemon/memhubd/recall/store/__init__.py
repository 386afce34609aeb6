"""Drawer storage: the `DrawerStore` interface and its SQLite implementation.

Nothing outside this package writes SQL; callers pass filters, terms and vectors.
"""

from __future__ import annotations

import os

from memhubd.recall.store.base import (
    CONTEXT_WEIGHT,
    MAX_IMPORTANCE,
    SOURCE_KINDS,
    AuditEntry,
    Copy,
    Drawer,
    DrawerFilter,
    DrawerStore,
    EmbedderRecord,
    Existing,
    Facets,
    IndexWarming,
    NewDrawer,
    NewTriple,
    PeriodsOverlap,
    RankedRow,
    SchemaTooNew,
    StoreError,
    StoreStatus,
    TaxonomyEntry,
    Triple,
    TripleFilter,
    TripleStats,
    VectorsUnavailable,
    WriteOutcome,
)
from memhubd.recall.store.schema import CURRENT_VERSION


def open_store(path: str | os.PathLike[str]) -> DrawerStore:
    """Open (creating or migrating) the SQLite store at `path`."""
    from memhubd.recall.store.sqlite import SQLiteStore

    return SQLiteStore(path)


__all__ = [
    "CONTEXT_WEIGHT",
    "CURRENT_VERSION",
    "MAX_IMPORTANCE",
    "SOURCE_KINDS",
    "AuditEntry",
    "Copy",
    "Drawer",
    "DrawerFilter",
    "DrawerStore",
    "EmbedderRecord",
    "Existing",
    "Facets",
    "IndexWarming",
    "NewDrawer",
    "NewTriple",
    "PeriodsOverlap",
    "RankedRow",
    "SchemaTooNew",
    "StoreError",
    "StoreStatus",
    "TaxonomyEntry",
    "Triple",
    "TripleFilter",
    "TripleStats",
    "VectorsUnavailable",
    "WriteOutcome",
    "open_store",
]
