"""The EvidencePack: the layered answer to a query, and its JSON and text forms.

Key orders, float rounding and Python-repr fragments are part of the memdsl contract
(`memdsl.evidence_pack.v1`); this module must not decide what goes in which layer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

try:
    from _json import make_encoder as _c_make_encoder
except ImportError:  # an interpreter without the C accelerator
    _c_make_encoder = None

EVIDENCE_PACK_SCHEMA = "memdsl.evidence_pack.v1"


@dataclass(frozen=True, slots=True)
class ScoredDeclaration:
    """A retrieved declaration with its score and the terms that earned it."""

    declaration: Any
    score: float
    matched_terms: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class EvidencePack:
    """MUST / SHOULD / CONTEXT / CONFLICT / MISSING for one query, plus its search trace."""

    query: str
    must: Sequence[Any] = field(default_factory=list)
    should: list[Any] = field(default_factory=list)
    context: list[ScoredDeclaration] = field(default_factory=list)
    conflicts: list[tuple[Any, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    resolved_subjects: list[str] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The JSON contract: fixed key order, scores rounded to 3 decimals."""
        return {
            "schema_version": EVIDENCE_PACK_SCHEMA,
            "query": self.query,
            "resolved_subjects": list(self.resolved_subjects),
            "must": [declaration_dict(d) for d in self.must],
            "should": [declaration_dict(d) for d in self.should],
            "context": [
                {
                    **declaration_dict(s.declaration),
                    "score": round(float(s.score), 3),
                    "matched_terms": list(s.matched_terms),
                }
                for s in self.context
            ],
            "conflicts": [{"id": d.id, "conflicts_with": t} for d, t in self.conflicts],
            "missing": list(self.missing),
            "search_trace": self.trace,
        }

    def render_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=False)

    def json_parts(
        self,
        piece: Callable[[Any], bytes],
        extra: dict[str, Any] | None = None,
        must_section: Callable[[Sequence[Any]], bytes] | None = None,
    ) -> list[bytes]:
        """`as_dict()` (plus `extra` keys at the end) as compact JSON, in parts to join.

        `piece(d)` must give `compact_json(declaration_dict(d))`: a caller keeps those
        per snapshot, so an answer costs the joining of bytes, not their encoding. The
        parts' lengths add up to the answer's, so a size limit can be checked before
        anything is joined. `must_section(must)`, when given, must equal
        `join_pieces(must, piece)`: a caller may keep it for a MUST layer met again.
        """
        head = {
            "schema_version": EVIDENCE_PACK_SCHEMA,
            "query": self.query,
            "resolved_subjects": list(self.resolved_subjects),
        }
        parts = [compact_json(head)[:-1], b',"must":[']
        must = must_section(self.must) if must_section else join_pieces(self.must, piece)
        if must:
            parts.append(must)
        parts.append(b'],"should":[')
        _join_into(parts, [piece(d) for d in self.should])
        parts.append(b'],"context":[')
        _join_into(parts, [_context_piece(piece(s.declaration), s) for s in self.context])
        tail = {
            "conflicts": [{"id": d.id, "conflicts_with": t} for d, t in self.conflicts],
            "missing": list(self.missing),
            "search_trace": self.trace,
            **(extra or {}),
        }
        parts += [b"],", compact_json(tail)[1:]]
        return parts

    def render_text(self, must_section: Callable[[Sequence[Any]], str] | None = None) -> str:
        """The CLI's default rendering (no trailing newline).

        `must_section(must)`, when given, must equal `must_text(must)` (a caller may
        keep it for a MUST layer met again).
        """
        lines: list[str] = []
        if self.resolved_subjects:
            lines.append(f"# resolved subjects: {', '.join(self.resolved_subjects)}")
        lines.append("MUST")
        if self.must:
            lines.append(must_section(self.must) if must_section else must_text(self.must))
        else:
            lines.append(NO_CONSTRAINTS)
        lines += ["", "SHOULD"]
        lines.extend(f"- [{d.id}] {d.claim_text}" for d in self.should)
        if not self.should:
            lines.append("- (none)")
        lines += ["", "CONTEXT"]
        lines.extend(_context_line(s.declaration) for s in self.context)
        if not self.context:
            lines.append("- (none)")
        if self.conflicts:
            lines += ["", "CONFLICT"]
            lines.extend(f"- [{d.id}] conflicts_with [{t}]" for d, t in self.conflicts)
        if self.missing:
            lines += ["", "MISSING"]
            lines.extend(f"- {message}" for message in self.missing)
        return "\n".join(lines)


def declaration_dict(d: Any) -> dict[str, Any]:
    """One declaration as the pack's JSON shows it (evidence only when non-empty)."""
    out = {
        "id": d.id,
        "type": d.kind,
        "kind": d.kind,
        "runtime_role": d.runtime_role,
        "capabilities": sorted(d.capabilities),
        "claim": d.claim_text,
        "force": d.force,
        "scope": d.scope,
        "subject": d.subject,
        "confidence": d.confidence,
        "lifecycle": dict(d.lifecycle),
        "access_policy": dict(d.access_policy),
        "status": d.status,
        "file": d.file,
        "line": d.line,
    }
    if d.evidence:
        out["evidence"] = d.evidence
    return out


def _json_dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _compact_encoder() -> Callable[[Any], str]:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`, with the C encoder
    made once: `dumps` builds an encoder object and a C encoder on every call, most of
    the cost of a small value and a third of a declaration's. No cycle check (answers
    are trees) and no state, so threads may share it."""
    if _c_make_encoder is None:
        return _json_dumps
    fallback = json.JSONEncoder()
    encode = _c_make_encoder(
        None, fallback.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )

    def dumps(value: Any) -> str:
        return "".join(encode(value, 0))

    return dumps


_compact = _compact_encoder()


# orjson escapes a string byte for byte as `json.dumps(..., ensure_ascii=False)` does
# (checked for every code point), and a long one in a fraction of the time (an MCP
# answer's 16 KB rendered text: 12 us against 68 us, the results kept). For short
# strings, and for dicts and lists, its per-call cost is higher than the C encoder's;
# and it writes some floats otherwise (1e-7, null for NaN): those all go to `_compact`.
LONG_TEXT = 4096


def _long_text(value: Any) -> bytes | None:
    """`value` written by orjson when it is a long string; None otherwise, or when orjson
    refuses it (a lone surrogate, which `_compact` writes and UTF-8 does not)."""
    if type(value) is str and len(value) >= LONG_TEXT:
        try:
            encoded = orjson.dumps(value)
        except orjson.JSONEncodeError:
            return None
        # Copied to its own size: orjson's bytes keep the whole buffer it reserved
        # (about seven times the text), and a kept answer is counted by its length.
        return memoryview(encoded).tobytes()
    return None


def compact_text(value: Any) -> str:
    """`compact_json(value)` as text (MCP answers are text)."""
    encoded = _long_text(value)
    return _compact(value) if encoded is None else encoded.decode("utf-8")


def compact_json(value: Any) -> bytes:
    """The JSON API's encoding: compact, UTF-8, non-ASCII kept as is."""
    encoded = _long_text(value)
    return _compact(value).encode("utf-8") if encoded is None else encoded


def declaration_json(d: Any) -> bytes:
    """`declaration_dict(d)` as the JSON API encodes it: one piece of an answer.

    Written by orjson when it writes the same bytes, which is whenever the dict holds
    no float (orjson writes `1e-7` for `1e-07` and null for NaN): a declaration's own
    fields never do, so only a type default can bring one. orjson takes 1.4 us where
    the C encoder takes 6 us; it refuses what it cannot write alike (a lone
    surrogate, an int past 64 bits), which the C encoder then writes.
    """
    value = declaration_dict(d)
    descriptor = d.type_descriptor
    if descriptor is None or descriptor.float_free:
        try:
            # Copied to its own size: orjson's bytes keep the buffer it reserved.
            return memoryview(orjson.dumps(value)).tobytes()
        except orjson.JSONEncodeError:
            pass
    return compact_json(value)


def _context_piece(piece: bytes, scored: ScoredDeclaration) -> bytes:
    # The declaration's object with two more keys: its closing brace gives way to them.
    score = compact_json(round(float(scored.score), 3))
    terms = compact_json(list(scored.matched_terms))
    return b"".join((piece[:-1], b',"score":', score, b',"matched_terms":', terms, b"}"))


def join_pieces(declarations: Sequence[Any], piece: Callable[[Any], bytes]) -> bytes:
    """The declarations' pieces, comma-separated: the inside of a JSON array."""
    return b",".join([piece(d) for d in declarations])


def must_text(must: Sequence[Any], line: Callable[[Any], str] | None = None) -> str:
    """The MUST lines of the text rendering. `line(d)`, when given, must equal
    `must_line(d)` (a caller may keep each declaration's line)."""
    return "\n".join(map(line or must_line, must))


def _join_into(parts: list[bytes], pieces: list[bytes]) -> None:
    if pieces:
        parts.append(b",".join(pieces))


def must_line(d: Any) -> str:
    """One MUST line of the text rendering."""
    # The exceptions suffix prints the raw field with str(): "[]", "['a']" or a scalar.
    suffix = f" (exceptions: {d.fields['exceptions']})" if "exceptions" in d.fields else ""
    return f"- [{d.id}] {d.claim_text}{suffix}"


def _context_line(d: Any) -> str:
    as_of = d.lifecycle.get("as_of") if d.has_capability("temporal") else None
    suffix = f" (as_of {as_of})" if as_of else ""
    return f"- [{d.id}] {d.claim_text}{suffix}"


# memdsl's line for an empty MUST layer, and memhub's when a budget emptied it.
NO_CONSTRAINTS = "- (no constraints apply)"
MUST_LEFT_OUT = "- (none shown: the budget left every MUST rule out; see MORE MUST)"


def must_left_out(rendered: str) -> str:
    """A query's text whose MUST layer a budget emptied: its MUST section says the rules
    were left out, not that none apply (the MORE MUST section counts them)."""
    lines = rendered.split("\n")
    for at, line in enumerate(lines[:-1]):
        if line == "MUST":
            if lines[at + 1] == NO_CONSTRAINTS:
                lines[at + 1] = MUST_LEFT_OUT
            break
    return "\n".join(lines)
