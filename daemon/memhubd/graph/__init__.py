"""The temporal knowledge graph: stored and derived triples, tunnels and fact-check.

Engine package: plain synchronous Python over a recall store, a governed `Workspace`
and plain data. It must not import runtime, service, api, mcp or any web library;
who may see what arrives here as already-filtered inputs.
"""

from memhubd.graph.derived import derived_facts
from memhubd.graph.factcheck import fact_check
from memhubd.graph.facts import Fact, derived_triple_id, is_derived_id, triple_id
from memhubd.graph.kg import merge, stats, timeline
from memhubd.graph.tunnels import Tunnel, find_tunnels

__all__ = [
    "Fact",
    "Tunnel",
    "derived_facts",
    "derived_triple_id",
    "fact_check",
    "find_tunnels",
    "is_derived_id",
    "merge",
    "stats",
    "timeline",
    "triple_id",
]
