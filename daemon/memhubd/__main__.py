"""`python -m memhubd` runs the memhubd command line."""

import sys

from memhubd.cli import main

sys.exit(main())
