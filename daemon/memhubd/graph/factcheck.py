"""Fact-check of a draft against the knowledge graph, deterministic and without a model:
names close to a known entity, relations contradicting a valid fact, and facts whose
validity has ended (mempal's three checks).

The fourth check, against governed MUST rules, needs the compliance gate with the
caller's view and is added by the service layer. Nothing here reads a store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhubd.graph.facts import Fact

MAX_DISTANCE = 2
MIN_NAME = 3
# Longer "names" are never checked for near misses: their deletion variants grow with the
# square of their length, and no entity name is that long.
MAX_INDEXED_NAME = 64
_TRAILING = ".,;:?!)]\"'"
_ARTICLES = ("the", "a", "an")
# Capitalised words that start sentences, not names: mempal's extractor has no such
# list and reports "Thy" for "The"; these are left out.
_NOT_NAMES = frozenset(
    """The This That These Those There Then They Their What When Where Which While Who Why
    How And But For Not Our Its Yes Also Any All Each Every Some Now Here Just Only Once
    After Before Since Until With Without From Into Over Under About Because Please""".split()
)

# Predicates that cannot both hold between the same two names (symmetric).
_INCOMPATIBLE = {
    "husband_of": {"brother_of", "father_of", "son_of"},
    "wife_of": {"sister_of", "mother_of", "daughter_of"},
    "mother_of": {"wife_of"},
    "father_of": {"husband_of"},
    "employee_of": {"founder_of", "owner_of"},
    "reports_to": {"manages"},
    "subordinate_of": {"manager_of"},
}
INCOMPATIBLE: dict[str, frozenset[str]] = {}
for _left, _rights in _INCOMPATIBLE.items():
    for _right in _rights:
        INCOMPATIBLE.setdefault(_left, frozenset())
        INCOMPATIBLE[_left] |= {_right}
        INCOMPATIBLE.setdefault(_right, frozenset())
        INCOMPATIBLE[_right] |= {_left}


@dataclass(frozen=True, slots=True)
class Claim:
    subject: str
    predicate: str
    object: str

    def text(self) -> str:
        return f"({self.subject}) --[{self.predicate}]--> ({self.object})"


def looks_like_name(token: str) -> bool:
    """At least 3 ASCII letters, the first upper case."""
    return len(token) >= MIN_NAME and token.isascii() and token.isalpha() and token[0].isupper()


def _clean(token: str) -> str:
    return token.rstrip(_TRAILING).lstrip("(\"'[")


def names_in(text: str) -> list[str]:
    """Capitalised ASCII words of at least 3 letters (possessive 's dropped), in order."""
    found: list[str] = []
    for raw in text.split():
        token = _clean(raw)
        if token.endswith("'s"):
            token = token[:-2]
        if looks_like_name(token) and token not in _NOT_NAMES:
            found.append(token)
    return list(dict.fromkeys(found))


def _role(token: str) -> bool:
    return token.isascii() and token.isalpha() and token.islower()


def claims_in(text: str) -> list[Claim]:
    """Relations stated in `text`, by three patterns (mempal's):
    `P1 is P2's ROLE`, `P1 works|work at|for P2`, `P1 is [the|a|an] ROLE of P2`."""
    tokens = [_clean(t) for t in text.split()]
    found: list[Claim] = []
    for i, first in enumerate(tokens):
        if not looks_like_name(first):
            continue
        rest = tokens[i + 1 : i + 6]
        if len(rest) >= 3 and rest[0] == "is" and rest[1].endswith("'s") and _role(rest[2]):
            other = rest[1][:-2]
            if looks_like_name(other):
                found.append(Claim(first, f"{rest[2]}_of", other))
                continue
        works = len(rest) >= 3 and rest[0] in ("works", "work") and rest[1] in ("at", "for")
        if works and looks_like_name(rest[2]):
            found.append(Claim(first, "works_at", rest[2]))
            continue
        if len(rest) >= 4 and rest[0] == "is":
            tail = rest[2:] if rest[1] in _ARTICLES else rest[1:]
            if len(tail) >= 3 and _role(tail[0]) and tail[1] == "of" and looks_like_name(tail[2]):
                found.append(Claim(first, f"{tail[0]}_of", tail[2]))
    return list(dict.fromkeys(found))


def edit_distance(left: str, right: str, ceiling: int = MAX_DISTANCE) -> int:
    """Levenshtein distance over bytes; any value above `ceiling` is `ceiling + 1`."""
    a, b = left.encode(), right.encode()
    if abs(len(a) - len(b)) > ceiling:
        return ceiling + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > ceiling:
            return ceiling + 1
        previous = current
    return min(previous[-1], ceiling + 1)


def _citation(fact: Fact) -> dict[str, Any]:
    return {
        "triple_id": fact.id,
        "source_drawer": fact.source_drawer,
        "source_declaration": fact.source_declaration,
    }


def _deletions(name: str) -> set[str]:
    """`name` with up to MAX_DISTANCE letters deleted. Two names within MAX_DISTANCE
    edits share one of these (each edit is a deletion on one side or on both)."""
    out = frontier = {name}
    for _ in range(MAX_DISTANCE):
        frontier = {word[:i] + word[i + 1 :] for word in frontier for i in range(len(word))}
        out = out | frontier
    return out


def _name_conflicts(
    mentioned: Sequence[str], known: Mapping[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    issues = []
    # Comparing every mentioned name with every known one took minutes for a long draft
    # against a big graph: only names sharing a deletion variant can be close enough.
    index: dict[str, list[str]] = {}
    for candidate in known:
        if len(candidate) <= MAX_INDEXED_NAME:
            for variant in _deletions(candidate):
                index.setdefault(variant, []).append(candidate)
    for name in mentioned:
        if name in known or len(name) > MAX_INDEXED_NAME:
            continue
        best: tuple[int, str] | None = None
        near = {c for variant in _deletions(name) for c in index.get(variant, ())}
        for candidate in near:
            distance = edit_distance(name, candidate)
            if distance <= MAX_DISTANCE and (best is None or (distance, candidate) < best):
                best = (distance, candidate)
        if best is not None:
            distance, entity = best
            issues.append(
                {
                    "kind": "similar_name_conflict",
                    "mentioned": name,
                    "known_entity": entity,
                    "edit_distance": distance,
                    "source": known[entity],
                }
            )
    return issues


def known_entities(
    facts: Iterable[Fact],
    symbols: Iterable[tuple[str, str]],
    drawers: Iterable[tuple[str, str]],
) -> dict[str, dict[str, Any]]:
    """Name -> where it is known from: a fact's subject or object, a governed symbol
    `(name, declaration id)`, or a drawer's text `(drawer id, content)`; first source wins."""
    known: dict[str, dict[str, Any]] = {}
    for fact in facts:
        for value in (fact.subject, fact.object):
            if looks_like_name(value):
                known.setdefault(value, _citation(fact))
    for name, declaration_id in symbols:
        if looks_like_name(name):
            known.setdefault(name, {"source_declaration": declaration_id})
    for drawer_id, content in drawers:
        for name in names_in(content):
            known.setdefault(name, {"source_drawer": drawer_id})
    return known


def fact_check(
    text: str,
    facts: Sequence[Fact],
    known: Mapping[str, dict[str, Any]],
    now: int,
    scanned: int | None = None,
) -> dict[str, Any]:
    """mempal's result: `issues` (name conflicts, then contradictions, then stale facts),
    `checked_entities`, `kg_triples_scanned`, plus the `claims` read from the text.
    `facts` may be only those between the claims' names when `scanned` counts the
    graph they were picked from."""
    mentioned = names_in(text)
    claims = claims_in(text)
    issues = _name_conflicts(mentioned, known)
    contradictions: list[dict[str, Any]] = []
    stale: list[dict[str, Any]] = []
    pairs: dict[tuple[str, str], list[Fact]] = {}  # one pass over the graph, not one per claim
    for fact in facts:
        pairs.setdefault((fact.subject, fact.object), []).append(fact)
    for claim in claims:
        between = pairs.get((claim.subject, claim.object), [])
        clashing = INCOMPATIBLE.get(claim.predicate, frozenset())
        for fact in between:
            if fact.valid_at(now) and fact.predicate in clashing:
                contradictions.append(
                    {
                        "kind": "relation_contradiction",
                        "subject": claim.subject,
                        "text_claim": claim.text(),
                        "kg_fact": fact.line_text(),
                        **_citation(fact),
                    }
                )
        same = [f for f in between if f.predicate == claim.predicate]
        if any(f.valid_at(now) for f in same):
            continue  # valid again (re-added after it ended): not stale
        for fact in same:
            if fact.valid_to is not None and fact.valid_to <= now:
                stale.append(
                    {
                        "kind": "stale_fact",
                        "subject": fact.subject,
                        "predicate": fact.predicate,
                        "object": fact.object,
                        "valid_to": fact.valid_to,
                        **_citation(fact),
                    }
                )
    return {
        "issues": issues + contradictions + stale,
        "checked_entities": mentioned,
        "claims": [
            {"subject": c.subject, "predicate": c.predicate, "object": c.object} for c in claims
        ],
        "kg_triples_scanned": len(facts) if scanned is None else scanned,
    }
