"""`python -m memctl`: the same entry point as the `memctl` script."""

from __future__ import annotations

import sys

from memctl.cli import main

sys.exit(main())
