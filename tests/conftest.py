"""Suite-wide pytest settings: anyio on asyncio only, hypothesis profiles, and
subprocesses that reuse compiled bytecode.

Hypothesis runs the "ci" profile (60 examples a property) unless
MEMHUB_HYPOTHESIS_PROFILE names another: "deep" (1,000 examples) for a longer local
hunt, e.g. `MEMHUB_HYPOTHESIS_PROFILE=deep .venv/bin/python -m pytest tests/unit`.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings
from workspace_loading import Loader, load_workspace

# Examples are drawn anew on every run (not derandomized), so CI keeps exploring
# across runs what one run's 60 examples leave out.
settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "deep", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("MEMHUB_HYPOTHESIS_PROFILE", "ci"))

# The tests start memctl, memhubd and worker processes hundreds of times, and the
# packages are installed editable (never byte-compiled as a wheel install would be):
# without a bytecode cache each start compiles memhubd afresh. The cache lives
# outside the tree; the test process itself is already running and unaffected.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault(
    "PYTHONPYCACHEPREFIX",
    os.path.join(tempfile.gettempdir(), f"memhub-tests-pycache-{os.getuid()}"),
)


_SHORT_BASETEMP = "_memhub_short_basetemp"


def pytest_configure(config: pytest.Config) -> None:
    # Under pytest-xdist each worker's temp dirs sit in `<basetemp>/popen-gwN/`, ten
    # bytes deeper: tests that put a Unix socket under tmp_path then pass the 107-byte
    # limit. A short fresh base per run keeps them within it (and runs apart).
    is_controller = not hasattr(config, "workerinput")
    if is_controller and config.getoption("numprocesses", None) and not config.option.basetemp:
        config.option.basetemp = tempfile.mkdtemp(prefix="pt-")
        setattr(config, _SHORT_BASETEMP, config.option.basetemp)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    short = getattr(session.config, _SHORT_BASETEMP, None)
    if short and exitstatus == 0:  # kept after a failure, for its files
        shutil.rmtree(short, ignore_errors=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def load() -> Loader:
    """`load(text)` or `load({"a.mem": text, ...})` -> Workspace (standard types)."""
    return load_workspace
