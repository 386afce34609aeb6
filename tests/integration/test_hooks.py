"""`memctl hooks`: install (or print) the Claude Code and Codex hooks into temporary
project and home directories, idempotently and without losing the user's settings;
then run the installed commands as the agent would, against a real daemon: the prompt
hook drains exactly once and exits 0 with the daemon down, the end hook ingests the
session's transcript into recall."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM = "team-coding"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "recall"
TRANSCRIPT = FIXTURES / "claude-code" / "3b1f6c2e-9a41-4d2b-8c77-0e5d2f9a1b34.jsonl"
MEMCTL = f"{sys.executable} -m memctl"
AGENT = "read:summary,read:search,write:recall"


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "CODEX_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), **extra)
    return env


def memctl(home: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memctl", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(home),
        cwd=cwd,
    )


def run_hook(command: str, payload: dict[str, Any], env: dict[str, str]) -> Any:
    """Run a hook command as the agents do: through a shell, the event JSON on stdin."""
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def commands(settings: dict[str, Any], event: str) -> list[str]:
    return [h["command"] for group in settings["hooks"][event] for h in group["hooks"]]


# --------------------------------------------------------------------------- install


def test_claude_code_install_merges_keeps_a_backup_and_is_idempotent(tmp_path: Path) -> None:
    project = tmp_path / "project"
    settings_file = project / ".claude" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    original = {
        "model": "sonnet",
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo branch"}]}],
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
            ],
        },
    }
    settings_file.write_text(json.dumps(original))
    argv = ("hooks", "install", "--claude-code", "--project", str(project), "--memctl", "memctl")
    first = memctl(tmp_path, *argv)
    assert first.returncode == 0, first.stderr
    assert "updated" in first.stdout
    settings = json.loads(settings_file.read_text())
    assert settings["model"] == "sonnet" and settings["permissions"] == original["permissions"]
    assert settings["hooks"]["PreToolUse"] == original["hooks"]["PreToolUse"]
    assert commands(settings, "UserPromptSubmit") == [
        "echo branch",
        "memctl cowork drain --format plain",
    ]
    assert commands(settings, "SessionEnd") == ["memctl hooks session-end --background"]
    assert json.loads((project / ".claude" / "settings.json.bak").read_text()) == original
    written = settings_file.read_bytes()

    second = memctl(tmp_path, *argv)
    assert second.returncode == 0 and "already up to date" in second.stdout
    assert settings_file.read_bytes() == written


def test_an_older_memctl_hook_is_replaced_not_duplicated(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    stale = {"hooks": [{"type": "command", "command": "memctl cowork drain -w old"}]}
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [stale]}})
    )
    result = memctl(
        tmp_path, "hooks", "install", "--claude-code", "--project", str(project),
        "--memctl", "memctl", "-w", TEAM,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert commands(settings, "UserPromptSubmit") == [
        f"memctl cowork drain --format plain --workspace={TEAM}"
    ]


def test_a_settings_file_that_is_not_a_json_object_is_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    settings_file = project / ".claude" / "settings.json"
    settings_file.write_text('{"model": "sonnet",')
    result = memctl(tmp_path, "hooks", "install", "--claude-code", "--project", str(project))
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert settings_file.read_text() == '{"model": "sonnet",'
    assert not (project / ".claude" / "settings.json.bak").exists()


def test_print_shows_the_hooks_and_writes_nothing(tmp_path: Path) -> None:
    result = memctl(
        tmp_path, "hooks", "install", "--codex", "--print", "--memctl", "memctl", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert commands(printed, "UserPromptSubmit") == ["memctl cowork drain --format hook-json"]
    assert commands(printed, "Stop") == ["memctl hooks session-end"]
    assert str(tmp_path / ".codex" / "hooks.json") in result.stderr
    assert not (tmp_path / ".codex").exists()


def test_codex_install_writes_hooks_json_and_warns_when_hooks_are_off(tmp_path: Path) -> None:
    codex = tmp_path / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text('model = "o4"\n[features]\nhooks = false\n')
    result = memctl(tmp_path, "hooks", "install", "--codex", "--memctl", "memctl")
    assert result.returncode == 0, result.stderr
    assert "turned off" in result.stderr
    hooks = json.loads((codex / "hooks.json").read_text())
    assert set(hooks["hooks"]) == {"UserPromptSubmit", "Stop"}
    assert (codex / "config.toml").read_text().startswith('model = "o4"')  # never edited


# --------------------------------------------------------------------------- the hooks at work


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("hooks")
    with start_daemon(root, copy_examples(root / "ws", [TEAM, "writing"])) as live:
        yield live


def installed(home: Path, flag: str) -> dict[str, Any]:
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    result = memctl(
        home, "hooks", "install", flag, "--project", str(project), "--memctl", MEMCTL, "-w", TEAM
    )
    assert result.returncode == 0, result.stderr
    path = project / ".claude" / "settings.json" if flag == "--claude-code" else None
    path = path or project / ".codex" / "hooks.json"  # --project: the project's own
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_the_prompt_hook_drains_exactly_once(daemon: LiveDaemon, tmp_path: Path) -> None:
    sender = daemon.tokens.get("hook-sender") or daemon.add_token(
        "hook-sender", AGENT, workspaces=[TEAM]
    )
    receiver = daemon.tokens.get("hook-receiver") or daemon.add_token(
        "hook-receiver", AGENT, workspaces=[TEAM]
    )
    with daemon.http(sender) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/cowork/push",
            json={"to": "hook-receiver", "content": "deploy freeze starts at noon"},
        )
    assert answer.status_code == 201, answer.text
    (drain,) = commands(installed(tmp_path, "--claude-code"), "UserPromptSubmit")
    env = clean_env(tmp_path, MEMHUB_URL=daemon.url, MEMHUB_TOKEN=receiver)
    event = {"hook_event_name": "UserPromptSubmit", "prompt": "what next?", "cwd": str(tmp_path)}
    first = run_hook(drain, event, env)
    assert first.returncode == 0, first.stderr
    assert "from hook-sender in team-coding: deploy freeze starts at noon" in first.stdout
    second = run_hook(drain, event, env)
    assert second.returncode == 0 and second.stdout == ""

    # Codex's hook answers in its JSON shape.
    with daemon.http(sender) as http:
        http.post(
            f"/v1/workspaces/{TEAM}/cowork/push",
            json={"to": "hook-receiver", "content": "second note"},
        )
    (codex_drain,) = commands(installed(tmp_path / "codex-home", "--codex"), "UserPromptSubmit")
    answer = run_hook(codex_drain, event, env)
    context = json.loads(answer.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "second note" in context


def test_the_prompt_hook_exits_0_with_the_daemon_down(tmp_path: Path) -> None:
    (drain,) = commands(installed(tmp_path, "--claude-code"), "UserPromptSubmit")
    for url in (f"unix://{tmp_path}/gone.sock", "http://127.0.0.1:9"):
        env = clean_env(tmp_path, MEMHUB_URL=url, MEMHUB_TOKEN="mh_x_y")
        result = run_hook(drain, {"prompt": "hi"}, env)
        assert result.returncode == 0 and result.stdout == ""
        assert "cannot reach memhubd" in result.stderr


def test_the_end_hook_ingests_the_session_transcript(daemon: LiveDaemon, tmp_path: Path) -> None:
    writer = daemon.tokens.get("hook-writer") or daemon.add_token(
        "hook-writer", AGENT, workspaces=[TEAM]
    )
    project_dir = tmp_path / "transcripts" / "-home-ana-src-billing"
    project_dir.mkdir(parents=True)
    transcript = project_dir / TRANSCRIPT.name
    shutil.copy(TRANSCRIPT, transcript)
    (installed_end,) = commands(installed(tmp_path, "--claude-code"), "SessionEnd")
    # Claude Code's is detached (its SessionEnd hooks get 1.5 s in all): the same
    # command in the foreground says what it did
    assert installed_end.endswith(" --background")
    end = installed_end.removesuffix(" --background")
    env = clean_env(tmp_path, MEMHUB_URL=daemon.url, MEMHUB_TOKEN=writer)
    event = {"hook_event_name": "SessionEnd", "transcript_path": str(transcript), "reason": "exit"}
    result = run_hook(end, event, env)
    assert result.returncode == 0 and result.stdout == "", result.stderr
    again = run_hook(end, event, env)
    assert again.returncode == 0 and "0 new chunk(s)" in again.stderr  # unchanged: nothing new
    with daemon.http(writer) as http:
        hits = http.post(
            f"/v1/workspaces/{TEAM}/recall/search",
            json={"query": "invoice webhook worker retries Stripe"},
        ).json()["hits"]
    sources = {h["source_file"] for h in hits}
    assert f"-home-ana-src-billing/{TRANSCRIPT.name}" in sources
    nothing = run_hook(end, {"hook_event_name": "SessionEnd"}, env)
    assert nothing.returncode == 0 and "no transcript_path" in nothing.stderr
    garbled = subprocess.run(
        ["/bin/sh", "-c", end], input="not json", capture_output=True, text=True, env=env
    )
    assert garbled.returncode == 0 and garbled.stdout == ""
    assert "the hook input is not JSON" in garbled.stderr


def writer_and_transcript(daemon: LiveDaemon, project: Path, word: str) -> tuple[str, Path]:
    """A token that may ingest, and a copy of the Claude Code transcript in `project`
    whose "invoice" reads `word`: words of its own, so that its exchanges are not
    another test's duplicates."""
    writer = daemon.tokens.get("hook-writer") or daemon.add_token(
        "hook-writer", AGENT, workspaces=[TEAM]
    )
    transcript = project / TRANSCRIPT.name
    project.mkdir(parents=True)
    transcript.write_text(TRANSCRIPT.read_text().replace("invoice", word))
    return writer, transcript


def test_the_claude_code_end_hook_ingests_in_a_detached_process_and_logs(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    writer, transcript = writer_and_transcript(daemon, tmp_path / "-home-bo-src-api", "invoyce")
    (end,) = commands(installed(tmp_path, "--claude-code"), "SessionEnd")
    env = clean_env(tmp_path, MEMHUB_URL=daemon.url, MEMHUB_TOKEN=writer)
    event = {"hook_event_name": "SessionEnd", "transcript_path": str(transcript), "reason": "exit"}
    log = tmp_path / ".local" / "state" / "memctl" / "session-end.log"

    # When the agent runs the hook in a process group of its own and stops that group
    # as soon as the hook returns (as a SessionEnd budget that ran out would)
    hook = subprocess.Popen(
        ["/bin/sh", "-c", end],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    out, err = hook.communicate(json.dumps(event), timeout=60)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(hook.pid, signal.SIGKILL)

    # Then the hook said where its summary goes, and the detached ingest wrote it there
    assert hook.returncode == 0 and out == "", err
    assert "ingesting in the background" in err and str(log) in err
    deadline = time.monotonic() + 30
    while "new chunk(s)" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
        time.sleep(0.1)
    assert f"-home-bo-src-api/{TRANSCRIPT.name}: " in log.read_text()
    assert oct(log.stat().st_mode & 0o777) == oct(0o600)
    with daemon.http(writer) as http:
        hits = http.post(
            f"/v1/workspaces/{TEAM}/recall/search",
            json={"query": "invoyce webhook worker retries Stripe"},
        ).json()["hits"]
    assert f"-home-bo-src-api/{TRANSCRIPT.name}" in {h["source_file"] for h in hits}


def test_a_background_end_hook_ingests_even_where_it_cannot_log(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    writer, transcript = writer_and_transcript(daemon, tmp_path / "-home-cy-src-web", "invoize")
    # Given a state directory that cannot hold the log (a file stands where it would go)
    blocked = tmp_path / "state-is-a-file"
    blocked.write_text("")
    (end,) = commands(installed(tmp_path, "--claude-code"), "SessionEnd")
    env = clean_env(
        tmp_path, MEMHUB_URL=daemon.url, MEMHUB_TOKEN=writer, XDG_STATE_HOME=str(blocked)
    )
    event = {"hook_event_name": "SessionEnd", "transcript_path": str(transcript)}
    result = run_hook(end, event, env)
    assert result.returncode == 0 and "ingesting in the background" in result.stderr
    # Then the transcript is ingested all the same
    deadline = time.monotonic() + 30
    while True:
        with daemon.http(writer) as http:
            hits = http.post(
                f"/v1/workspaces/{TEAM}/recall/search", json={"query": "invoize webhook worker"}
            ).json()["hits"]
        if f"-home-cy-src-web/{TRANSCRIPT.name}" in {h["source_file"] for h in hits}:
            break
        assert time.monotonic() < deadline, hits
        time.sleep(0.2)
