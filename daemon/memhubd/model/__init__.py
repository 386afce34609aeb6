"""Typed memories and the workspace that holds them (spec §1.5-1.6).

Derived properties and lookups only; linting, querying and serving live downstream.
"""

from memhubd.model.declaration import RELATION_FIELDS, Declaration
from memhubd.model.workspace import ACTIVE_STATUSES, EXCLUDED_STATUSES, Workspace

__all__ = [
    "ACTIVE_STATUSES",
    "EXCLUDED_STATUSES",
    "RELATION_FIELDS",
    "Declaration",
    "Workspace",
]
