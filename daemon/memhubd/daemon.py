"""`memhubd serve` and `memhubd run-examples`: configuration in, a running daemon out.

Argument handling, the checks a user should hear about before anything binds, and
the human-facing banner only; the server lives in server.py. It never edits the
repository's `examples/`: `run-examples` serves copies seeded in the state dir.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import anyio

from memhubd.runtime.config import ConfigError, DaemonConfig, config_from_args
from memhubd.runtime.state import StateFileError

EXAMPLES_DIR = "examples"  # under the state dir: the copies `make run` serves
# Runtime files a copy must not inherit (proposals, audit, locks of an earlier run).
_NOT_COPIED = shutil.ignore_patterns(".memdsl", "__pycache__")

# Runs once the configuration is known (before anything binds); returns banner lines.
_Prepare = Callable[[DaemonConfig], list[str]]


def _serve(args: argparse.Namespace, prepare: _Prepare | None = None) -> int:
    from memhubd.runtime.logging import configure_logging

    try:
        config = config_from_args(args)
        notes: list[str] = []
        if prepare is not None:
            # What would refuse the start refuses it before `prepare` changes anything
            # (--reset replaces the copies another daemon may be serving).
            _check_start(config)
            notes = prepare(config)
            config = config_from_args(args)  # prepare may have named the workspaces
        check_workspace_dirs(config)
    except (ConfigError, StateFileError) as error:
        print(f"memhubd: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"memhubd: {start_failure(error, args)}", file=sys.stderr)
        return 2
    # The parse cache's snapshot files are checked while the server's modules import.
    from memhubd.runtime.cache import prefetch_snapshots
    from memhubd.runtime.state import PARSE_CACHE_DIR, state_path

    prefetch_snapshots(state_path(config.state_dir) / PARSE_CACHE_DIR, config.workspaces.values())
    raise_open_file_limit()
    from memhubd.server import print_banner, run_daemon

    configure_logging(config.log_format, config.log_level)
    announce = prepare is not None or sys.stderr.isatty()

    def on_ready(info: object) -> None:
        if not announce:
            return
        banner = io.StringIO()
        print_banner(info, banner, config.state_dir)  # type: ignore[arg-type]
        lines = banner.getvalue().splitlines()
        # The notes belong with the addresses, above the closing "Press Ctrl-C" line.
        print("\n".join([*lines[:-1], *notes, *lines[-1:]]), file=sys.stderr, flush=True)

    try:
        return anyio.run(lambda: run_daemon(config, on_ready=on_ready))
    except (ConfigError, StateFileError) as error:
        print(f"memhubd: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"memhubd: {start_failure(error, config)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def start_failure(error: OSError, config: DaemonConfig | argparse.Namespace) -> str:
    """One line for a start stopped by a file or an address, naming the setting: the
    listeners name theirs (ConfigError), a file names the state dir it lies in."""
    if isinstance(error, socket.gaierror):  # the host is not an address or a known name
        return f"cannot listen on host {config.host!r} (host, or --host): {error}"
    reason = error.strerror or str(error)
    if not error.filename:
        return f"cannot start: {reason}"
    path = os.fsdecode(error.filename)
    state_dir = getattr(config, "state_dir", None)
    if state_dir:
        from memhubd.runtime.state import state_path

        root = str(state_path(state_dir))
        if path == root or path.startswith(root + os.sep):
            # A read-only or full state dir, or a file where it (or a folder in it) belongs.
            shown = "" if path == root else f"{path}: "
            return f"state_dir {root}: {shown}{reason}"
    return f"cannot start: {path}: {reason}"


def _check_start(config: DaemonConfig) -> None:
    from memhubd.auth.tokens import TokenStore
    from memhubd.runtime.state import StateDir, hold_state_dir
    from memhubd.server import check_addresses_free, check_tokens_readable

    # Held from here to the daemon's end: no other daemon changes what this one serves.
    hold_state_dir(StateDir(config.state_dir))
    tokens = TokenStore(config.state_dir)
    check_tokens_readable(tokens)
    check_addresses_free(config)


# The most open files asked for when the hard limit is unlimited.
OPEN_FILES_WANTED = 65536


def raise_open_file_limit() -> None:
    """Raise the soft limit of open files to the hard one. A shell's soft limit is often
    1,024: every connection is a file, so a few hundred slow clients would leave no
    room to accept the operator's socket, /healthz or the watchers' files."""
    try:
        import resource
    except ImportError:  # not on a POSIX system
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES_WANTED if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def check_workspace_dirs(config: DaemonConfig) -> None:
    """Refuse to start on a configured workspace that is not a directory.

    `memctl workspaces add` refuses such a path; a configured one is refused the same
    way rather than served as an empty, silently unavailable workspace.
    """
    for name, root in sorted(config.workspaces.items()):
        if not os.path.isdir(root):
            problem = "does not exist" if not os.path.lexists(root) else "is not a directory"
            raise ConfigError(
                f"workspace '{name}': {root} {problem}; "
                "create it or fix the path (--workspace NAME=PATH or [workspaces] in the config)"
            )
    from memhubd.runtime.state import overlapping

    clash = overlapping(config.workspaces)
    if clash is not None:
        (one, one_root), (other, other_root) = clash
        relation = "is" if one_root == other_root else "holds"
        raise ConfigError(
            f"workspace '{one}' ({one_root}) {relation} workspace '{other}' ({other_root}): "
            "one declaration could be approved through each; serve one of them"
        )


def cmd_serve(args: argparse.Namespace) -> int:
    return _serve(args)


def bundled_examples() -> Path | None:
    """The repository's `examples/` folder ($MEMHUB_EXAMPLES overrides), or None."""
    configured = os.environ.get("MEMHUB_EXAMPLES", "").strip()
    candidates = [Path(configured)] if configured else []
    candidates += [Path(__file__).resolve().parents[2] / "examples", Path.cwd() / "examples"]
    return next((root for root in candidates if root.is_dir()), None)


def example_names(root: Path) -> list[str]:
    return sorted(
        child.name for child in root.iterdir() if child.is_dir() and not child.name.startswith(".")
    )


def seed_examples(source: Path, target: Path, *, reset: bool = False) -> dict[str, str]:
    """Copy each example workspace from `source` into `target` unless a copy exists.

    An existing copy is kept as it is, with the user's edits and approvals; `reset`
    replaces it with a fresh copy. Returns name -> path of the copy.
    """
    target.mkdir(parents=True, exist_ok=True)
    served: dict[str, str] = {}
    for name in example_names(source):
        copy = target / name
        if reset and copy.exists():
            shutil.rmtree(copy)
        if not copy.exists():
            # Copy beside the final name, then rename: an interrupted copy is never served.
            partial = target / f".{name}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(source / name, partial, ignore=_NOT_COPIED)
            partial.rename(copy)
        served[name] = str(copy)
    return served


def cmd_run_examples(args: argparse.Namespace) -> int:
    source = bundled_examples()
    if source is None:
        print("memhubd: the examples/ folder was not found (set MEMHUB_EXAMPLES)", file=sys.stderr)
        return 2

    def prepare(config: DaemonConfig) -> list[str]:
        target = Path(config.state_dir) / EXAMPLES_DIR
        try:
            # The state dir holds tokens: if the copies create it, it is private, as always.
            Path(config.state_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
            served = seed_examples(source, target, reset=bool(getattr(args, "reset", False)))
        except OSError as error:
            raise ConfigError(f"cannot copy the examples into {target}: {error}") from error
        if not getattr(args, "workspaces", None):
            args.workspaces = list(served.items())
        return [f"  files   {target}/NAME    (copies of {source}; edits and approvals land here)"]

    return _serve(args, prepare)
