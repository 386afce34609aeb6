"""The memdsl linter: 22 diagnostic codes over a loaded workspace (spec §3).

Reports problems in memory sources; it never edits them.
"""

from memhubd.lint.declaration_checks import STALE_STATE_DAYS
from memhubd.lint.diagnostics import Diagnostic, has_errors
from memhubd.lint.linter import MODULE_MAX_DECLARATIONS, LintReuse, lint, lint_files, lint_today

__all__ = [
    "MODULE_MAX_DECLARATIONS",
    "STALE_STATE_DAYS",
    "Diagnostic",
    "LintReuse",
    "has_errors",
    "lint",
    "lint_files",
    "lint_today",
]
