"""Where an approval may write: a `.mem` file whose real path lies inside the workspace root.

Pure path checks (realpath resolves symlinks); it creates nothing. A refusal is an
Issue, so the caller can report it and leave the disk untouched.
"""

from __future__ import annotations

import os

from memhubd.review.validation import Issue


def resolve_target(root: str, staging: str, into: object) -> str | Issue:
    """The absolute real path to write for `into`, or the Issue that refuses it.

    A relative `into` is taken relative to the workspace root (not the process's
    working directory). `root` and `staging` must already be real paths.
    """
    if not isinstance(into, str) or not into.strip():
        return Issue("target_required", "an approval needs a target .mem file (into)")
    path = into if os.path.isabs(into) else os.path.join(root, into)
    try:
        real = os.path.realpath(path)
    except (ValueError, OSError) as exc:  # e.g. an embedded NUL byte
        return Issue("target_invalid", f"approval target {into!r} is not a usable path: {exc}")
    if not _inside(real, root):
        return Issue(
            "target_outside_workspace",
            f"approval target {into!r} resolves to {real}, outside the workspace {root}",
        )
    if _inside(real, staging) or real == staging:
        return Issue("target_in_staging", f"approval target {into!r} is inside the review staging")
    if not real.endswith(".mem") or os.path.basename(real) == ".mem":
        return Issue("target_not_mem", f"approval target {into!r} must be a .mem file")
    if os.path.lexists(real) and not os.path.isfile(real):
        return Issue("target_not_file", f"approval target {into!r} exists and is not a file")
    return real


def _inside(path: str, directory: str) -> bool:
    """True when `path` is strictly below `directory`."""
    return path != directory and os.path.commonpath([path, directory]) == directory
