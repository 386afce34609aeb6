"""One knowledge-graph edge as every answer shows it, stored or derived, and its ids.

A validity period runs from `valid_from` (inclusive; None: always) to `valid_to`
(exclusive; None: still valid). Pure values; nothing here reads a store or a workspace.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from memhubd.recall.ids import sanitize
from memhubd.recall.store import Triple

DERIVED_PREFIX = "derived_"


def _prefix(text: str) -> str:
    return sanitize(text)[:8] or "x"


def triple_id(subject: str, predicate: str, obj: str, digits: int = 8) -> str:
    """mempal's id: `triple_{s[:8]}_{p[:8]}_{sha256(s 0 p 0 o)[:8]}` (sanitized parts).
    With `digits=16`, the longer form a fact takes when another holds its id (as a
    drawer's content does)."""
    digest = hashlib.sha256(f"{subject}\0{predicate}\0{obj}".encode()).hexdigest()[:digits]
    return f"triple_{_prefix(subject)}_{_prefix(predicate)}_{digest}"


def derived_triple_id(declaration_id: str, subject: str, predicate: str, obj: str) -> str:
    """The id of a triple derived from a declaration: its own prefix, so that it can never
    be taken for a stored triple (nor be invalidated as one)."""
    text = f"{declaration_id}\0{subject}\0{predicate}\0{obj}"
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{DERIVED_PREFIX}{_prefix(subject)}_{_prefix(predicate)}_{digest}"


def is_derived_id(value: str) -> bool:
    return value.startswith(DERIVED_PREFIX)


@dataclass(frozen=True, slots=True)
class Fact:
    """A stored triple period, or a read-only triple derived from a declaration."""

    id: str
    subject: str
    predicate: str
    object: str
    valid_from: int | None
    valid_to: int | None
    confidence: float = 1.0
    source_drawer: str | None = None
    source_declaration: str | None = None
    identity: str | None = None
    created_at: int | None = None
    # Derived only: the declaration's status is superseded, retracted or archived, so
    # the fact is no longer agreed (it shows in history, never as valid).
    retired: bool = False
    file: str | None = None
    line: int | None = None

    @property
    def derived(self) -> bool:
        return self.source_declaration is not None

    @classmethod
    def of(cls, triple: Triple) -> Fact:
        return cls(
            id=triple.id,
            subject=triple.subject,
            predicate=triple.predicate,
            object=triple.object,
            valid_from=triple.valid_from,
            valid_to=triple.valid_to,
            confidence=triple.confidence,
            source_drawer=triple.source_drawer,
            identity=triple.identity,
            created_at=triple.created_at,
        )

    def valid_at(self, instant: int) -> bool:
        """Valid at `instant`: valid_from <= instant < valid_to (open ends always hold)."""
        if self.retired:
            return False
        if self.valid_from is not None and self.valid_from > instant:
            return False
        return self.valid_to is None or instant < self.valid_to

    def mentions(self, entity: str) -> bool:
        return self.subject == entity or self.object == entity

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "subject": self.subject,
            "predicate": self.predicate,
            "object": self.object,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            "confidence": self.confidence,
            "source_drawer": self.source_drawer,
            "source_declaration": self.source_declaration,
            "derived": self.derived,
            "identity": self.identity,
            "created_at": self.created_at,
        }
        if self.derived:
            data["retired"] = self.retired
            data["file"] = self.file
            data["line"] = self.line
        return data

    def line_text(self) -> str:
        """`(S) --[P]--> (O)  [from..to]`, as mempal's CLI prints a triple."""
        return f"({self.subject}) --[{self.predicate}]--> ({self.object})  [{self.window()}]"

    def window(self) -> str:
        if self.retired:
            return "retired"
        if self.valid_from is None and self.valid_to is None:
            return "always"
        start = str(self.valid_from) if self.valid_from is not None else "always"
        end = str(self.valid_to) if self.valid_to is not None else "now"
        return f"{start}..{end}"
