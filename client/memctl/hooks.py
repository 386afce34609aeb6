"""`memctl hooks ...`: install (and uninstall) prompt hooks for Claude Code and Codex, and
the session-end hook that ingests a session's transcript into recall.

`install` merges two command hooks into the agent's settings (Claude Code:
`<project>/.claude/settings.json`; Codex: `<project>/.codex/hooks.json` with `--project`,
else `$CODEX_HOME/hooks.json` or `~/.codex/hooks.json`): a prompt-submit hook running
`memctl cowork drain`, and an end hook running `memctl hooks session-end`. The user's
other keys and hooks are kept, the file is written in place of the one a symlink names,
the user's original is kept once as `<file>.bak`, and installing twice changes nothing.
`uninstall` takes out exactly those hooks. No token is ever written: the hooks resolve
it as memctl does (MEMHUB_TOKEN, client.toml). `session-end` exits 0 whatever happens.
Imports the wire contract and httpx only.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import secrets
import shlex
import shutil
import stat
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

from memhub_protocol.recall import IngestRequest, UploadedFile

DRAIN_MARK = "cowork drain"
END_MARK = "hooks session-end"
DRAIN_TIMEOUT_S = 10  # what the agent waits at most for the prompt hook
END_TIMEOUT_S = 120
SESSION_END_TIMEOUT = 60.0
# The hook's event is read whole: its large fields (a prompt, Codex's last_assistant_message)
# are the model's or the user's text, far below this; past it the rest is read and dropped.
MAX_HOOK_INPUT = 16 * 1024 * 1024
INPUT_CHUNK = 64 * 1024
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
PART_BYTES = 800 * 1024  # under the daemon's default body limit (1 MiB) once JSON-encoded


class HookConfigError(Exception):
    """A settings file memctl must not touch as it is (not JSON, wrong shape)."""


@dataclass(frozen=True, slots=True)
class Agent:
    """Where an agent keeps its hooks and which events they go to."""

    name: str
    prompt_event: str
    end_event: str
    drain_format: str
    # Whether the end hook ingests in the background: Claude Code gives all of a
    # session's SessionEnd hooks 1.5 s together (unless the user raises it), less than
    # a long transcript's upload takes.
    end_in_background: bool = False


CLAUDE_CODE = Agent("claude-code", "UserPromptSubmit", "SessionEnd", "plain", True)
# Codex has no session-end event: Stop runs after every turn, and re-ingesting an
# unchanged transcript costs a comparison, a grown one replaces its drawers.
CODEX = Agent("codex", "UserPromptSubmit", "Stop", "hook-json")


# --------------------------------------------------------------------------- parser


def add_hooks_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "hooks", parents=[common], help="prompt hooks for Claude Code and Codex (cowork, recall)"
    )
    actions = p.add_subparsers(dest="hooks_action", metavar="ACTION", required=True)
    summary = "write (or print) the prompt-submit and session-end hooks of an agent"
    a = actions.add_parser("install", parents=[common], help=summary, description=summary)
    a.set_defaults(local_handler=cmd_install)
    _add_target_options(a)
    a.add_argument("--print", action="store_true", help="print the hooks, write nothing")
    a.add_argument(
        "--memctl",
        metavar="COMMAND",
        help="how the hooks run memctl (default: memctl on PATH, else this Python -m memctl)",
    )
    summary = "remove the hooks install wrote, and nothing else"
    a = actions.add_parser("uninstall", parents=[common], help=summary, description=summary)
    a.set_defaults(local_handler=cmd_uninstall)
    _add_target_options(a)
    summary = "ingest the transcript named by a hook's JSON on stdin into recall (exits 0)"
    a = actions.add_parser(
        "session-end",
        parents=[common],
        help=summary,
        description=summary,
        epilog=f"--timeout defaults to {SESSION_END_TIMEOUT:g} seconds here.",
    )
    a.add_argument(
        "--background",
        action="store_true",
        help="read the event, then ingest in a detached process and exit at once "
        f"(its summary goes to {_log_hint()})",
    )
    a.set_defaults(local_handler=cmd_session_end)


def _add_target_options(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--claude-code", action="store_true", help="<project>/.claude/settings.json")
    which.add_argument(
        "--codex",
        action="store_true",
        help="<project>/.codex/hooks.json with --project, else $CODEX_HOME or ~/.codex/hooks.json",
    )
    parser.add_argument(
        "--project", metavar="DIR", help="the project (Claude Code: default .; Codex: none)"
    )
    parser.add_argument("--settings", metavar="FILE", help="this file instead")


# --------------------------------------------------------------------------- install


def memctl_command(explicit: str | None = None) -> str:
    if explicit:
        return explicit
    if shutil.which("memctl"):
        return "memctl"
    return f"{shlex.quote(sys.executable)} -m memctl"


def hook_commands(agent: Agent, args: argparse.Namespace) -> tuple[str, str]:
    """(prompt hook command, end hook command). Options the user gave at install time
    (url, workspace) are kept; a token never is."""
    base = memctl_command(getattr(args, "memctl", None))
    options = ""
    for flag, key in (("--url", "url"), ("--workspace", "workspace")):
        value = getattr(args, key, None)
        if value:
            # One word with `=`: a value starting with '-' (a workspace may be named
            # `-dash`) would otherwise be read as an option, and the hook exit 2.
            options += " " + shlex.quote(f"{flag}={value}")
    drain = f"{base} {DRAIN_MARK} --format {agent.drain_format}{options}"
    end = f"{base} {END_MARK}{options}" + (" --background" if agent.end_in_background else "")
    return drain, end


def hook_entries(agent: Agent, args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    drain, end = hook_commands(agent, args)
    return {
        agent.prompt_event: [_group(drain, DRAIN_TIMEOUT_S)],
        agent.end_event: [_group(end, END_TIMEOUT_S)],
    }


def _group(command: str, timeout: int) -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}


def _ours(hook: Any, mark: str) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and "memctl" in command and mark in command


def _without_ours(group: Any, mark: str) -> Any:
    """`group` without its memctl hooks of kind `mark`; None when none of its hooks is left."""
    kept = [h for h in group["hooks"] if not _ours(h, mark)]
    return {**group, "hooks": kept} if kept else None


def _holds_ours(group: Any, mark: str) -> bool:
    inner = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(inner, list) and any(_ours(h, mark) for h in inner)


def _event_groups(hooks: dict[str, Any], event: str) -> list[Any]:
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise HookConfigError(f"'hooks.{event}' is not a list")
    return groups


def merge_hooks(settings: dict[str, Any], entries: dict[str, list[dict[str, Any]]]) -> bool:
    """Put each event's one memctl group into `settings` in place; True if it changed.

    A memctl hook that differs from the wanted one (an older command) is replaced;
    every other hook, group and key is kept as it was.
    """
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise HookConfigError("'hooks' is not an object")
    before = copy.deepcopy(hooks)
    for event, (wanted,) in entries.items():
        mark = DRAIN_MARK if DRAIN_MARK in wanted["hooks"][0]["command"] else END_MARK
        merged: list[Any] = []
        present = False
        for group in _event_groups(hooks, event):
            if not _holds_ours(group, mark):
                merged.append(group)
            elif group == wanted and not present:
                present = True
                merged.append(group)
            elif (kept := _without_ours(group, mark)) is not None:
                merged.append(kept)
        if not present:
            merged.append(wanted)
        hooks[event] = merged
    return hooks != before


def remove_hooks(settings: dict[str, Any], agent: Agent) -> list[str]:
    """Take the memctl hooks `install` puts in out of `settings`, in place, recognised as
    `merge_hooks` recognises them; the events that changed. A group, an event list or
    `hooks` left empty by that goes too; everything else stays as it was."""
    hooks = settings.get("hooks")
    if hooks is None:
        return []
    if not isinstance(hooks, dict):
        raise HookConfigError("'hooks' is not an object")
    changed = []
    for event, mark in ((agent.prompt_event, DRAIN_MARK), (agent.end_event, END_MARK)):
        groups = _event_groups(hooks, event)
        if not any(_holds_ours(group, mark) for group in groups):
            continue
        kept = [
            group if not _holds_ours(group, mark) else _without_ours(group, mark)
            for group in groups
        ]
        hooks[event] = [group for group in kept if group is not None]
        if not hooks[event]:
            del hooks[event]
        changed.append(event)
    if changed and not hooks:
        del settings["hooks"]
    return changed


def settings_path(agent: Agent, args: argparse.Namespace, env: Any = None) -> Path:
    env = os.environ if env is None else env
    if getattr(args, "settings", None):
        return Path(args.settings)
    project = getattr(args, "project", None)
    if agent is CLAUDE_CODE:
        return Path(project or ".") / ".claude" / "settings.json"
    if project:  # Codex reads <repo>/.codex/hooks.json in a trusted project
        return Path(project) / ".codex" / "hooks.json"
    return _codex_home(env) / "hooks.json"


def _codex_home(env: Any) -> Path:
    return Path(
        env.get("CODEX_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".codex")
    )


def _load(path: Path) -> dict[str, Any]:
    """The settings in `path` ({} when there is no such file); a file memctl cannot read
    as a JSON object (a directory, bytes that are not UTF-8, not JSON) is left alone."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except IsADirectoryError:
        raise HookConfigError(f"{path} is a directory, not a settings file") from None
    except UnicodeDecodeError as error:
        raise HookConfigError(f"{path} is not UTF-8 text ({error}); fix it first") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as error:
        raise HookConfigError(f"{path} is not valid JSON ({error}); fix it first") from None
    if not isinstance(data, dict):
        raise HookConfigError(f"{path} does not hold a JSON object; fix it first")
    return data


def backup_path(path: Path) -> Path:
    """Where the user's original of `path` is kept: next to the file a symlink names."""
    real = Path(os.path.realpath(path))
    return real.with_name(real.name + ".bak")


def _write(path: Path, data: dict[str, Any]) -> bool:
    """Write `data` as the file `path` is, or names when it is a symlink (the link stays a
    link); True if the original was kept as `<file>.bak` now.

    The new text goes to a temporary file beside the target, then over it atomically,
    with the target's mode and, where allowed, its owner. The first write keeps the
    original as `<file>.bak` (mode 0600); later ones leave that original alone.
    """
    real = Path(os.path.realpath(path))
    try:
        status: os.stat_result | None = real.stat()
    except FileNotFoundError:
        status = None
    # Root passes os.access on any file: a file nobody may write was made read-only on purpose.
    if status is not None and (not os.access(real, os.W_OK) or not status.st_mode & 0o222):
        raise HookConfigError(f"{real} is not writable; nothing changed")
    real.parent.mkdir(parents=True, exist_ok=True)
    if not os.access(real.parent, os.W_OK):
        raise HookConfigError(f"{real.parent} is not writable; nothing changed")
    backed_up = status is not None and _keep_original(real)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    fd, temp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, status.st_mode & 0o777 if status else 0o666 & ~_umask())
        if status is not None:
            # Only root may give a file to another owner; anyone else's install owns it.
            with contextlib.suppress(PermissionError):
                os.chown(temp, status.st_uid, status.st_gid)
        os.replace(temp, real)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    return backed_up


def _keep_original(real: Path) -> bool:
    """Copy `real` to `<file>.bak` unless one is there already: that one is the user's
    original, from before the first install. 0600: settings may hold secrets."""
    try:
        fd = os.open(backup_path(real), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(real.read_bytes())
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        os.unlink(backup_path(real))  # half a copy must not pass for the original later
        raise
    return True


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def codex_hooks_disabled(env: Any = None) -> bool:
    """Whether Codex's config.toml turns hooks off: `[features] hooks`, else its older
    alias `codex_hooks`, is false (hooks are on by default)."""
    env = os.environ if env is None else env
    try:
        with open(_codex_home(env) / "config.toml", "rb") as handle:
            features = tomllib.load(handle).get("features", {})
    except (OSError, ValueError):  # ValueError: not TOML, or not UTF-8
        return False
    if not isinstance(features, dict):
        return False
    effective = features.get("hooks", features.get("codex_hooks"))
    return effective is False


def _target(args: argparse.Namespace) -> tuple[Agent, Path]:
    agent = CLAUDE_CODE if args.claude_code else CODEX
    project = getattr(args, "project", None)
    if project is not None and not Path(project).is_dir():
        raise HookConfigError(f"no such directory: {project}")
    settings = getattr(args, "settings", None)
    # A mistyped --settings would put the hooks where no agent reads them: its directory
    # must be there already (only an agent's own directory, .claude or .codex, is made).
    if settings and not Path(settings).absolute().parent.is_dir():
        raise HookConfigError(f"no such directory: {Path(settings).parent} (for --settings)")
    return agent, settings_path(agent, args)


def _refused(args: argparse.Namespace, error: Exception) -> int:
    """A settings file left alone: one line on stderr (and the error envelope on stdout
    with --json), exit 2 as every local failure."""
    if getattr(args, "json", False):
        from memctl.render import LOCAL, error_envelope

        print(error_envelope(LOCAL, str(error)))
    print(f"memctl: {error}", file=sys.stderr)
    return 2


def cmd_install(args: argparse.Namespace) -> int:
    try:
        agent, path = _target(args)
    except HookConfigError as error:
        return _refused(args, error)
    entries = hook_entries(agent, args)
    if args.print:
        print(f"# merge into {path}", file=sys.stderr)
        print(json.dumps({"hooks": entries}, indent=2, ensure_ascii=False))
        return 0
    try:
        settings = _load(path)
        changed = merge_hooks(settings, entries)
        backed_up = changed and _write(path, settings)
    except (HookConfigError, OSError) as error:
        return _refused(args, error)
    if getattr(args, "json", False):
        print(
            json.dumps(
                {"file": str(path.absolute()), "changed": changed, "events": list(entries)},
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        state = "updated" if changed else "already up to date"
        print(f"{agent.name} hooks {state}: {path}")
        if backed_up:
            print(f"the original file is kept as {backup_path(path)}")
    if agent is CODEX and codex_hooks_disabled():
        print(
            "warning: hooks are turned off in Codex's config.toml ([features] hooks = false); "
            "turn them on for these to run",
            file=sys.stderr,
        )
    if agent is CODEX and getattr(args, "project", None) and not getattr(args, "settings", None):
        print(
            "note: Codex reads a project's .codex/ only once the project is trusted",
            file=sys.stderr,
        )
    if not getattr(args, "json", False):
        print(
            "the hooks find the daemon and token as memctl does: set MEMHUB_URL/MEMHUB_TOKEN "
            "or ~/.config/memhub/client.toml; restart the agent to load them"
        )
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    try:
        agent, path = _target(args)
        settings = _load(path)
        removed = remove_hooks(settings, agent)
        if removed:
            _write(path, settings)
    except (HookConfigError, OSError) as error:
        return _refused(args, error)
    if getattr(args, "json", False):
        print(
            json.dumps(
                {"file": str(path.absolute()), "changed": bool(removed), "events": removed},
                indent=2,
                ensure_ascii=False,
            )
        )
    elif removed:
        print(f"{agent.name} hooks removed from {', '.join(removed)}: {path}")
    else:
        print(f"no memctl hooks of {agent.name} in {path}")
    return 0


# --------------------------------------------------------------------------- session-end


def transcript_parts(path: Path, citation: str) -> Iterator[UploadedFile]:
    """The transcript as one upload, in parts of at most PART_BYTES cut at line ends.

    The daemon joins the parts before it chunks the transcript, so an exchange is never
    split at a part's seam and the drawers are those of the whole file.
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for line in _lines_with_ends(text):
        weight = len(json.dumps(line))
        if current and size + weight > PART_BYTES:
            parts.append("".join(current))
            current, size = [], 0
        current.append(line)
        size += weight
    if current:
        parts.append("".join(current))
    if len(parts) == 1:
        yield UploadedFile(citation, parts[0])
        return
    upload = secrets.token_hex(8)
    for number, part in enumerate(parts):
        yield UploadedFile(citation, part, upload, number, len(parts))


def _lines_with_ends(text: str) -> list[str]:
    """`text`'s lines, each with its line feed. Only a line feed ends a JSONL line: a
    JSON string may hold U+2028, U+2029 or U+0085 raw, and `str.splitlines` would cut a
    message there (and a part's upload with it)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def read_hook_input(stream: BinaryIO, limit: int | None = None) -> bytes | None:
    """All of `stream` to its end; None when that is over `limit` bytes (MAX_HOOK_INPUT).

    Past the limit the input is still read, and dropped: the agent writes the whole
    event, and a hook that stops reading leaves it with a broken pipe. The event is
    parsed whole, never a prefix of it: only a whole document says which
    `transcript_path` is the event's own.
    """
    limit = MAX_HOOK_INPUT if limit is None else limit
    kept = bytearray()
    over = False
    while chunk := stream.read(INPUT_CHUNK):
        over = over or len(kept) + len(chunk) > limit
        if not over:
            kept += chunk
    return None if over else bytes(kept)


class _Stop(Exception):
    """The end hook has nothing to ingest, or the daemon refused it: `str` says why."""


def cmd_session_end(args: argparse.Namespace) -> int:
    """Always 0: a failing end hook would only bother the agent's user. With --json,
    `{"transcript", "chunks"}` or the error envelope on stdout (with --background,
    `{"transcript", "background": true, "log"}` once the ingest is handed over)."""
    from memctl.cowork import deadline, failure_code, failure_reason

    as_json = bool(getattr(args, "json", False))
    try:
        with deadline(float(getattr(args, "timeout", None) or SESSION_END_TIMEOUT)):
            path, citation = _transcript_named(args)
            if getattr(args, "background", False) and hasattr(os, "fork"):
                log = _in_background(args, path, citation)
                print(
                    f"memctl hooks session-end: {citation}: ingesting in the background "
                    f"(log: {log})",
                    file=sys.stderr,
                )
                if as_json:
                    answer = {"transcript": citation, "background": True, "log": str(log)}
                    print(json.dumps(answer, indent=2, ensure_ascii=False), flush=True)
                return 0
            chunks = _ingest_transcript(args, path, citation)
        print(f"memctl hooks session-end: {citation}: {chunks} new chunk(s)", file=sys.stderr)
        if as_json:
            answer = {"transcript": citation, "chunks": chunks}
            print(json.dumps(answer, indent=2, ensure_ascii=False), flush=True)
    except BaseException as error:  # noqa: BLE001 - a hook must never fail
        reason = failure_reason(error)
        print(f"memctl hooks session-end: {reason}", file=sys.stderr)
        if as_json:
            from memctl.render import error_envelope

            with contextlib.suppress(BaseException):  # a closed stdout, say
                print(error_envelope(failure_code(error), reason), flush=True)
    return 0


def _transcript_named(args: argparse.Namespace) -> tuple[Path, str]:
    """The transcript the hook's event names, checked, and its citation."""
    from memctl.commands import STDIN_CLOSED

    if sys.stdin is None:  # started with stdin closed: no hook input to read
        raise _Stop(STDIN_CLOSED)
    raw = read_hook_input(sys.stdin.buffer)
    if raw is None:
        raise _Stop(f"the hook input is over {MAX_HOOK_INPUT // (1024 * 1024)} MiB")
    try:
        payload = json.loads(raw) if raw.strip() else {}
    except ValueError as error:
        raise _Stop(f"the hook input is not JSON ({error})") from None
    transcript = payload.get("transcript_path") if isinstance(payload, dict) else None
    if not isinstance(transcript, str) or not transcript:
        raise _Stop("no transcript_path in the hook input")
    path = Path(transcript).expanduser()
    status = path.stat()
    if not stat.S_ISREG(status.st_mode):  # a FIFO or a device would block the read
        raise _Stop(f"{path} is not a regular file")
    if status.st_size > MAX_TRANSCRIPT_BYTES:
        raise _Stop(f"{path} is too large to ingest")
    return path, f"{path.parent.name}/{path.name}"


def _ingest_transcript(args: argparse.Namespace, path: Path, citation: str) -> int:
    """Ingest the transcript at `path`: the new chunks."""
    from memctl.answers import from_answer
    from memctl.client import MemhubClient
    from memctl.commands import Session
    from memctl.config import resolve_settings

    settings = resolve_settings(
        url=getattr(args, "url", None),
        token=getattr(args, "token", None),
        workspace=getattr(args, "workspace", None),
    )
    timeout = float(getattr(args, "timeout", None) or SESSION_END_TIMEOUT)
    with MemhubClient.connect(settings.url, token=settings.token, timeout=timeout) as client:
        workspace = Session(client, settings).workspace()
        chunks = 0
        for upload in transcript_parts(path, citation):
            request = IngestRequest(files=(upload,))
            answer = client._call("recall_ingest", workspace=workspace, body=request.to_json())
            last = upload.part == upload.parts - 1
            stored, reason = from_answer(answer, lambda a, last=last: _part_taken(a, last))
            chunks += stored
            if reason is not None:
                raise _Stop(f"{citation}: {reason}")
    return chunks


def _part_taken(answer: Any, last: bool) -> tuple[int, str | None]:
    """(new chunks, why the upload ends or None) from one part's ingest answer; a
    TypeError or KeyError for an answer of another shape (see `from_answer`)."""
    from memctl.answers import an_object
    from memctl.recall import part_kept

    answer = an_object(answer)
    chunks = answer.get("chunks", 0)
    if not isinstance(chunks, int) or isinstance(chunks, bool):
        raise TypeError(f"'chunks' is {chunks!r}, not a count")
    refused = answer.get("failed") or answer.get("skipped")
    if refused is not None and not (
        isinstance(refused, list) and all(isinstance(item, dict) for item in refused)
    ):
        raise TypeError("'failed' or 'skipped' holds something other than objects")
    if (not last and not part_kept(answer)) or (last and refused):
        # A part refused ends the upload; the whole file (or its last part) skipped or
        # failed is said as such, not as "0 new chunk(s)".
        return chunks, str((refused or [{}])[0].get("reason", "a part was refused"))
    return chunks, None


# The detached ingest's log: kept under LOG_BYTES, the one before as `<log>.1`.
LOG_NAME = "session-end.log"
LOG_BYTES = 256 * 1024


def session_end_log() -> Path:
    """`$XDG_STATE_HOME/memctl/session-end.log` (default `~/.local/state/...`)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "memctl" / LOG_NAME


def _log_hint() -> str:
    return "$XDG_STATE_HOME/memctl/" + LOG_NAME


def _in_background(args: argparse.Namespace, path: Path, citation: str) -> Path:
    """Fork a process of its own session that ingests `path`, its summary or error
    appended to the log; answer the log's path.

    Its own session: an agent that stops the hook (Claude Code's SessionEnd budget)
    signals the hook's process group, not it. A log that cannot be written loses the
    summary, never the ingest."""
    log = session_end_log()
    with contextlib.suppress(OSError):
        log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if log.stat().st_size > LOG_BYTES:
            os.replace(log, log.with_name(LOG_NAME + ".1"))
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() == 0:
        _ingest_detached(args, path, citation, log)
    return log


def _ingest_detached(args: argparse.Namespace, path: Path, citation: str, log: Path) -> NoReturn:
    """The forked process: ingest, append one line to `log`, exit (never back into the
    parent's code path)."""
    import time

    from memctl.cowork import deadline, failure_reason

    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        try:
            output = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError:
            output = null  # no log: the ingest still runs, its summary is lost
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(output, 2)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        try:
            # A fork keeps no timer: the detached ingest gets the hook's deadline anew.
            with deadline(float(getattr(args, "timeout", None) or SESSION_END_TIMEOUT)):
                chunks = _ingest_transcript(args, path, citation)
            line = f"{stamp} {citation}: {chunks} new chunk(s)"
        except BaseException as error:  # noqa: BLE001 - logged, never raised
            line = f"{stamp} {citation}: {failure_reason(error)}"
        os.write(output, (line + "\n").encode("utf-8", "replace"))
    finally:
        os._exit(0)
