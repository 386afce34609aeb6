"""Fixtures for compliance tests: workspaces from small `.mem` texts."""

from __future__ import annotations

from collections.abc import Callable
from textwrap import dedent

import pytest

from memhubd.lang import parse_text
from memhubd.model import Workspace
from memhubd.schema import TypeRegistry

Loader = Callable[..., Workspace]


@pytest.fixture
def load() -> Loader:
    """`load(text)` or `load({"a.mem": text, ...})` -> Workspace (standard types)."""

    def make(sources: str | dict[str, str], registry: TypeRegistry | None = None) -> Workspace:
        if isinstance(sources, str):
            sources = {"memory.mem": sources}
        documents = [parse_text(dedent(text), file=name) for name, text in sources.items()]
        return Workspace.from_documents(documents, registry or TypeRegistry.standard())

    return make
