"""The wire contract shared by memhubd and memctl: payload schema ids and error codes.

It depends on nothing of the daemon, so the thin client can import it alone.
"""

from __future__ import annotations

__version__ = "0.1.0"

# Payload schema ids, kept from memdsl 0.5.1 so that its clients keep working.
WORKSPACE_SCHEMA = "memdsl.workspace.v1"
EVIDENCE_PACK_SCHEMA = "memdsl.evidence_pack.v1"
MAP_SCHEMA = "memdsl.map.v1"
TYPES_SCHEMA = "memdsl.types.v1"
COMPLIANCE_BENCHMARK_SCHEMA = "memdsl.compliance.benchmark.v1"

# memhub's own payloads.
LINT_SCHEMA = "memhub.lint.v1"
