"""`memctl hooks ...`: install prompt hooks for Claude Code and Codex, and the session-end
hook that ingests a session's transcript into recall.

`install` merges two command hooks into the agent's settings (Claude Code:
`<project>/.claude/settings.json`; Codex: `$CODEX_HOME/hooks.json`, else
`~/.codex/hooks.json`): a prompt-submit hook running `memctl cowork drain`, and an end
hook running `memctl hooks session-end`. The user's other keys and hooks are kept, the
previous file is kept as `<file>.bak`, and installing twice changes nothing. No token
is ever written: the hooks resolve it as memctl does (MEMHUB_TOKEN, client.toml).
`session-end` exits 0 whatever happens. Imports the wire contract and httpx only.
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
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memhub_protocol.recall import IngestRequest, UploadedFile

DRAIN_MARK = "cowork drain"
END_MARK = "hooks session-end"
DRAIN_TIMEOUT_S = 10  # what the agent waits at most for the prompt hook
END_TIMEOUT_S = 120
SESSION_END_TIMEOUT = 60.0
MAX_HOOK_INPUT = 1024 * 1024
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


CLAUDE_CODE = Agent("claude-code", "UserPromptSubmit", "SessionEnd", "plain")
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
    which = a.add_mutually_exclusive_group(required=True)
    which.add_argument("--claude-code", action="store_true", help="<project>/.claude/settings.json")
    which.add_argument("--codex", action="store_true", help="$CODEX_HOME or ~/.codex/hooks.json")
    a.add_argument("--print", action="store_true", help="print the hooks, write nothing")
    a.add_argument("--project", default=".", metavar="DIR", help="Claude Code project (default .)")
    a.add_argument("--settings", metavar="FILE", help="merge into this file instead")
    a.add_argument(
        "--memctl",
        metavar="COMMAND",
        help="how the hooks run memctl (default: memctl on PATH, else this Python -m memctl)",
    )
    summary = "ingest the transcript named by a hook's JSON on stdin into recall (exits 0)"
    a = actions.add_parser(
        "session-end",
        parents=[common],
        help=summary,
        description=summary,
        epilog=f"--timeout defaults to {SESSION_END_TIMEOUT:g} seconds here.",
    )
    a.set_defaults(local_handler=cmd_session_end)


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
    for flag, key in (("--url", "url"), ("-w", "workspace")):
        value = getattr(args, key, None)
        if value:
            options += f" {flag} {shlex.quote(value)}"
    drain = f"{base} {DRAIN_MARK} --format {agent.drain_format}{options}"
    end = f"{base} {END_MARK}{options}"
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
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise HookConfigError(f"'hooks.{event}' is not a list")
        merged: list[Any] = []
        present = False
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(_ours(h, mark) for h in inner):
                merged.append(group)
            elif group == wanted and not present:
                present = True
                merged.append(group)
            else:
                kept = [h for h in inner if not _ours(h, mark)]
                if kept:
                    merged.append({**group, "hooks": kept})
        if not present:
            merged.append(wanted)
        hooks[event] = merged
    return hooks != before


def settings_path(agent: Agent, args: argparse.Namespace, env: Any = None) -> Path:
    env = os.environ if env is None else env
    if getattr(args, "settings", None):
        return Path(args.settings)
    if agent is CLAUDE_CODE:
        return Path(args.project) / ".claude" / "settings.json"
    home = env.get("CODEX_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".codex")
    return Path(home) / "hooks.json"


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as error:
        raise HookConfigError(f"{path} is not valid JSON ({error}); fix it first") from None
    if not isinstance(data, dict):
        raise HookConfigError(f"{path} does not hold a JSON object; fix it first")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    """Keep the previous file as `<file>.bak`, then replace it atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        shutil.copy2(path, path.with_name(path.name + ".bak"))
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o777)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def codex_hooks_disabled(env: Any = None) -> bool:
    """Whether Codex's config.toml turns hooks off (`[features] hooks = false`, or the
    older `codex_hooks = false`)."""
    env = os.environ if env is None else env
    home = env.get("CODEX_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".codex")
    try:
        with open(os.path.join(home, "config.toml"), "rb") as handle:
            features = tomllib.load(handle).get("features", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False
    if not isinstance(features, dict):
        return False
    return any(features.get(key) is False for key in ("hooks", "codex_hooks"))


def cmd_install(args: argparse.Namespace) -> int:
    agent = CLAUDE_CODE if args.claude_code else CODEX
    entries = hook_entries(agent, args)
    path = settings_path(agent, args)
    if args.print:
        print(f"# merge into {path}", file=sys.stderr)
        print(json.dumps({"hooks": entries}, indent=2, ensure_ascii=False))
        return 0
    try:
        settings = _load(path)
        changed = merge_hooks(settings, entries)
        if changed:
            _write(path, settings)
    except (HookConfigError, OSError) as error:
        print(f"memctl: {error}", file=sys.stderr)
        return 1
    state = "updated" if changed else "already up to date"
    print(f"{agent.name} hooks {state}: {path}")
    if changed and path.with_name(path.name + ".bak").exists():
        print(f"previous file kept as {path.name}.bak")
    if agent is CODEX and codex_hooks_disabled():
        print(
            "warning: hooks are turned off in Codex's config.toml ([features] hooks = false); "
            "turn them on for these to run",
            file=sys.stderr,
        )
    print(
        "the hooks find the daemon and token as memctl does: set MEMHUB_URL/MEMHUB_TOKEN "
        "or ~/.config/memhub/client.toml; restart the agent to load them"
    )
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


def cmd_session_end(args: argparse.Namespace) -> int:
    """Always 0: a failing end hook would only bother the agent's user."""
    from memctl.cowork import deadline, failure_reason

    try:
        with deadline(float(getattr(args, "timeout", None) or SESSION_END_TIMEOUT)):
            _session_end(args)
    except BaseException as error:  # noqa: BLE001 - a hook must never fail
        print(f"memctl hooks session-end: {failure_reason(error)}", file=sys.stderr)
    return 0


def _session_end(args: argparse.Namespace) -> None:
    from memctl.client import MemhubClient
    from memctl.commands import Session
    from memctl.config import resolve_settings
    from memctl.recall import part_kept

    raw = sys.stdin.read(MAX_HOOK_INPUT)
    try:
        payload = json.loads(raw) if raw.strip() else {}
    except ValueError as error:
        print(f"memctl hooks session-end: the hook input is not JSON ({error})", file=sys.stderr)
        return
    transcript = payload.get("transcript_path") if isinstance(payload, dict) else None
    if not isinstance(transcript, str) or not transcript:
        print("memctl hooks session-end: no transcript_path in the hook input", file=sys.stderr)
        return
    path = Path(transcript).expanduser()
    if path.stat().st_size > MAX_TRANSCRIPT_BYTES:
        print(f"memctl hooks session-end: {path} is too large to ingest", file=sys.stderr)
        return
    citation = f"{path.parent.name}/{path.name}"
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
            chunks += int(answer.get("chunks", 0))
            if upload.part < upload.parts - 1 and not part_kept(answer):
                refused = (answer.get("failed") or answer.get("skipped") or [{}])[0]
                reason = refused.get("reason", "a part was refused")
                print(f"memctl hooks session-end: {citation}: {reason}", file=sys.stderr)
                return
    print(f"memctl hooks session-end: {citation}: {chunks} new chunk(s)", file=sys.stderr)
