"""Fixtures for the review engine: a small workspace on disk and its review store."""

from __future__ import annotations

from pathlib import Path

import pytest
from review_helpers import make_workspace

from memhubd.review import ReviewStore


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws")


@pytest.fixture
def store(root: Path) -> ReviewStore:
    return ReviewStore(str(root))
