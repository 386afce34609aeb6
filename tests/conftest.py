"""Suite-wide pytest settings: anyio on asyncio only, hypothesis profiles."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from workspace_loading import Loader, load_workspace

settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def load() -> Loader:
    """`load(text)` or `load({"a.mem": text, ...})` -> Workspace (standard types)."""
    return load_workspace
