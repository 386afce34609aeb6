"""The security catalogue runs against the same real daemon as the integration tests.

Each module here is one family of attacks memhub withstands; the fixtures are
the integration suite's (a live memhubd over copies of the example workspaces).
"""

from tests.integration.conftest import (  # noqa: F401  (fixtures re-exported for pytest)
    LiveDaemon,
    copy_examples,
    live_daemon,
    shared_daemon,
    start_daemon,
)
