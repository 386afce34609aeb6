"""Small helpers shared by the lint tests: lint inline `.mem` text on a fixed day."""

from __future__ import annotations

import datetime as dt
from textwrap import dedent

from memhubd.lang import parse_text
from memhubd.lint import Diagnostic, lint
from memhubd.model import Workspace
from memhubd.schema import TypeDescriptor, TypeRegistry

TODAY = dt.date(2026, 11, 30)


def registry_with(*descriptors: TypeDescriptor) -> TypeRegistry:
    registry = TypeRegistry.standard()
    for descriptor in descriptors:
        registry.register(descriptor)
    return registry


def load(*sources: str, registry: TypeRegistry | None = None) -> Workspace:
    """One document per source, labelled a.mem, b.mem, ..."""
    documents = [
        parse_text(dedent(source), file=f"{chr(ord('a') + index)}.mem")
        for index, source in enumerate(sources)
    ]
    return Workspace.from_documents(documents, registry or TypeRegistry.standard())


def lint_text(
    *sources: str, registry: TypeRegistry | None = None, today: dt.date = TODAY
) -> list[Diagnostic]:
    return lint(load(*sources, registry=registry), today=today)


def codes(diagnostics: list[Diagnostic]) -> list[str]:
    return [d.code for d in diagnostics]


def only(diagnostics: list[Diagnostic], code: str) -> list[Diagnostic]:
    return [d for d in diagnostics if d.code == code]
