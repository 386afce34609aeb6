"""Where an approval may write: a `.mem` file whose real path lies inside the workspace root
(outside version control's own directories), and which file to suggest when the reviewer
has not named one, and when: not while git has an operation stopped half-way there.

Path checks (realpath resolves symlinks) over a loaded workspace, and git's state read
from the files of its git dir (no git is run); it creates and writes nothing. A refusal
is an Issue, so the caller can report it and leave the disk untouched.
"""

from __future__ import annotations

import os
import unicodedata
from collections import Counter
from collections.abc import Callable

from memhubd.model import Declaration, Workspace
from memhubd.review.marking import proposed_declaration
from memhubd.review.validation import Issue

# Version control's own directories: their files are never in a commit or a clone, so
# memory approved into one would be served here and nowhere else.
VCS_DIRS = frozenset({".git", ".hg", ".svn"})


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
    if real == root:
        return Issue(
            "target_not_mem", f"approval target {into!r} is the workspace root, not a .mem file"
        )
    if not _inside(real, root):
        return Issue(
            "target_outside_workspace",
            f"approval target {into!r} resolves to {real}, outside the workspace {root}",
        )
    if _inside(real, staging) or real == staging:
        return Issue("target_in_staging", f"approval target {into!r} is inside the review staging")
    vcs = _vcs_dir(real, root)
    if vcs is not None:
        return Issue(
            "target_in_vcs_dir",
            f"approval target {into!r} is inside {vcs}, version control's own directory: "
            "memory written there is never versioned nor cloned; name a file of the work tree",
        )
    if not real.endswith(".mem") or os.path.basename(real) == ".mem":
        return Issue("target_not_mem", f"approval target {into!r} must be a .mem file")
    if any(_unprintable(c) for c in os.path.relpath(real, root)):
        # A line break or other control character in a served file's name splits every
        # line-oriented listing of it (`files`, lint's `file:line:`) and every log line.
        return Issue(
            "target_invalid",
            f"approval target {into!r} holds a control character (a line break, a tab, ...) "
            "in its name: name a file without one",
        )
    if os.path.lexists(real) and not os.path.isfile(real):
        return Issue("target_not_file", f"approval target {into!r} exists and is not a file")
    unusable = _unmakeable(real, root)
    if unusable is not None:
        return Issue("target_invalid", f"approval target {into!r} cannot be a file: {unusable}")
    return real


def _unprintable(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Zl", "Zp")


def _vcs_dir(real: str, root: str) -> str | None:
    """The version-control directory (`.git`, `.hg`, `.svn`) that `real` lies in below
    `root`, or None. Compared without case: on a case-insensitive file system `.GIT`
    is `.git`."""
    for part in os.path.relpath(real, root).split(os.sep)[:-1]:
        if part.casefold() in VCS_DIRS:
            return part
    return None


def _unmakeable(real: str, root: str) -> str | None:
    """Why no file can ever be at `real` below `root`, or None when one can.

    Decided here rather than left to the write: the reason is the caller's `into`,
    which the write would report as a workspace it cannot write to.
    """
    name_max, path_max = _limits(root)
    if len(os.fsencode(real)) >= path_max:
        return f"the path is longer than {path_max - 1} bytes"
    for part in os.path.relpath(real, root).split(os.sep):
        if len(os.fsencode(part)) > name_max:
            return f"a name in it is longer than {name_max} bytes"
    # The nearest ancestor that exists is where the write makes its directories from.
    parent = os.path.dirname(real)
    while parent != root and not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if os.path.lexists(parent) and not os.path.isdir(parent):
        return f"{os.path.relpath(parent, root)} is a file, not a directory"
    return None


def _limits(root: str) -> tuple[int, int]:
    """The file system's longest name and path in bytes (POSIX's 255 and 4096 when it
    does not say, as for a root gone missing)."""
    try:
        return os.pathconf(root, "PC_NAME_MAX"), os.pathconf(root, "PC_PATH_MAX")
    except (OSError, ValueError):
        return 255, 4096


def _inside(path: str, directory: str) -> bool:
    """True when `path` is strictly below `directory`."""
    return path != directory and os.path.commonpath([path, directory]) == directory


def suggest_target(root: str, workspace: Workspace, source: str) -> str | None:
    """The `.mem` file an approval of `source` most likely belongs in, relative to `root`.

    In order: the file of a declaration it supersedes (the correction then sits beside
    what it corrects, and the approval can mark the old one superseded in the same
    write), a file of its own module, then the file holding most declarations of its
    type, then of its subject. None when nothing fits; pass the declarations the caller
    may see, so that a suggestion never points at a hidden one.
    """
    proposed = proposed_declaration(source, workspace)
    if proposed is None:
        return None
    for target in proposed.relation_targets("supersedes"):
        found = workspace.by_id(target)
        if found is not None and _usable(root, found.file):
            return _relative(root, found.file)
    module = proposed.module
    rules: list[Callable[[Declaration], bool]] = []
    if module:
        rules.append(lambda d: d.module == module)
    rules.append(lambda d: d.kind == proposed.kind)
    if proposed.subject:
        rules.append(lambda d: d.subject == proposed.subject)
    for rule in rules:
        counts = Counter(
            d.file for d in workspace.declarations if rule(d) and _usable(root, d.file)
        )
        if counts:
            # Most declarations first; the path breaks ties so the answer is stable.
            best = min(counts.items(), key=lambda item: (-item[1], item[0]))
            return _relative(root, best[0])
    return None


def _usable(root: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real.endswith(".mem") and _inside(real, root) and _vcs_dir(real, root) is None


def _relative(root: str, path: str) -> str:
    return os.path.relpath(os.path.realpath(path), root)


# What git leaves in a work tree's git dir while an operation is stopped half-way (on a
# conflict, or to edit), and the command that finishes or aborts it. `rebase-apply` is
# also `git am`'s, which marks it with `applying`.
_STOPPED_GIT_OPERATIONS = (
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
)


def git_operation(path: str) -> Issue | None:
    """Why nothing may be written at `path` now: the repository whose work tree holds it
    has a merge, rebase, cherry-pick, revert or `git am` stopped half-way; None otherwise.

    Such an operation owns the work tree until it is continued or aborted: a file
    written meanwhile makes `--continue` refuse, is folded into its commit by a
    `git add`, or is dropped by `--abort`. A bisect is not one (it leaves no conflict),
    nor is `index.lock`, which every `git status` takes for a moment. Read from the git
    dir's files, without running git: a few `stat` calls.
    """
    found = _git_dir(os.path.dirname(path))
    if found is None:
        return None
    git_dir, top = found
    for name, operation in _STOPPED_GIT_OPERATIONS:
        if os.path.lexists(os.path.join(git_dir, name)):
            if name == "rebase-apply" and os.path.lexists(os.path.join(git_dir, name, "applying")):
                operation = "am"
            return Issue(
                f"{operation.replace('-', '_')}_in_progress",
                f"a git {operation} is in progress in {top}: it owns the work tree until it "
                f"ends, and `git {operation} --abort` would drop what an approval writes now. "
                f"Finish it (`git {operation} --continue`) or abort it "
                f"(`git {operation} --abort`), then approve again; nothing was written",
            )
    return None


def _git_dir(directory: str) -> tuple[str, str] | None:
    """The git dir and work tree root of the repository holding `directory` (which need
    not exist): the nearest `.git` above it, a directory or a `gitdir:` file (a linked
    worktree's, a submodule's). None when there is none up to the file system root."""
    while True:
        dot = os.path.join(directory, ".git")
        if os.path.isdir(dot):
            return dot, directory
        if os.path.isfile(dot):
            pointed = _gitdir_of(dot)
            return (os.path.join(directory, pointed), directory) if pointed else None
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _gitdir_of(dot_git_file: str) -> str | None:
    """The path a `.git` file points to (`gitdir: <path>`, relative to its directory
    when not absolute); None when it cannot be read as one, as git then finds no
    repository either."""
    try:
        with open(dot_git_file, encoding="utf-8") as handle:
            first = handle.readline(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not first.startswith("gitdir:"):
        return None
    return first.removeprefix("gitdir:").strip() or None
