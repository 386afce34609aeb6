"""Recall: what was *said*, kept verbatim as drawers and searched by BM25 + vectors + RRF.

Engine package: plain synchronous Python over a store, an embedder and files. It must
not import runtime, service, api, mcp or any web library; identities arrive here as
plain names and role sets.
"""

from memhubd.recall.ids import drawer_id, sanitize, source_key
from memhubd.recall.store import (
    AuditEntry,
    Drawer,
    DrawerFilter,
    DrawerStore,
    NewDrawer,
    StoreError,
    TaxonomyEntry,
    open_store,
)

__all__ = [
    "AuditEntry",
    "Drawer",
    "DrawerFilter",
    "DrawerStore",
    "NewDrawer",
    "StoreError",
    "TaxonomyEntry",
    "drawer_id",
    "open_store",
    "sanitize",
    "source_key",
]
