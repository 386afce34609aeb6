"""Building workspaces from small `.mem` texts, for engine tests (the `load` fixture)."""

from __future__ import annotations

from collections.abc import Callable
from textwrap import dedent

from memhubd.lang import parse_text
from memhubd.model import Workspace
from memhubd.schema import TypeRegistry

Loader = Callable[..., Workspace]


def load_workspace(
    sources: str | dict[str, str], registry: TypeRegistry | None = None
) -> Workspace:
    """`load(text)` or `load({"a.mem": text, ...})` -> Workspace (standard types by default)."""
    if isinstance(sources, str):
        sources = {"memory.mem": sources}
    documents = [parse_text(dedent(text), file=name) for name, text in sources.items()]
    return Workspace.from_documents(documents, registry or TypeRegistry.standard())
