"""Reading memory: the EvidencePack query, the memory map, vocabulary and explain."""

from memhubd.query.engine import build_evidence_pack
from memhubd.query.explain import explain, explain_declaration, explain_payload
from memhubd.query.navigation import (
    MAP_SCHEMA,
    build_memory_map,
    render_memory_map_text,
    workspace_vocabulary,
)
from memhubd.query.pack import EVIDENCE_PACK_SCHEMA, EvidencePack, ScoredDeclaration

__all__ = [
    "EVIDENCE_PACK_SCHEMA",
    "MAP_SCHEMA",
    "EvidencePack",
    "ScoredDeclaration",
    "build_evidence_pack",
    "build_memory_map",
    "explain",
    "explain_declaration",
    "explain_payload",
    "render_memory_map_text",
    "workspace_vocabulary",
]
