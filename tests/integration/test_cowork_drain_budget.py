"""A drain within a byte budget through a real daemon: the JSON API's `max_bytes` and
`remaining`, and `memctl cowork drain` as a prompt hook runs it: its printed text stays
within what the agent keeps inline, says how many messages wait, delivers every one over
the next prompts exactly once, and reads the hook's payload so the agent never gets a
broken pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM, OTHER = "team-coding", "writing"
AGENT = "read:summary,read:search,write:recall"
PROMPT_BUDGET = 8000  # memctl's default for the prompt formats
INLINE_LIMIT = 10_000  # characters of a hook's output Claude Code keeps inline
WAITING = "waiting: they come with your next prompt (or run memctl cowork drain)"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("cowork-budget")
    with start_daemon(root, copy_examples(root / "ws", [TEAM, OTHER])) as live:
        yield live


def pair(daemon: LiveDaemon, prefix: str) -> tuple[str, tuple[str, str]]:
    """A sender's secret, and a recipient's (name, secret); both use TEAM and OTHER."""
    sender = daemon.add_token(f"{prefix}-from", AGENT, workspaces=[TEAM, OTHER])
    name = f"{prefix}-to"
    return sender, (name, daemon.add_token(name, AGENT, workspaces=[TEAM, OTHER]))


def push(daemon: LiveDaemon, secret: str, to: str, content: str, ws: str = TEAM) -> None:
    with daemon.http(secret) as http:
        answer = http.post(f"/v1/workspaces/{ws}/cowork/push", json={"to": to, "content": content})
    assert answer.status_code == 201, answer.text


def drain(daemon: LiveDaemon, secret: str, **params: Any) -> Any:
    with daemon.http(secret) as http:
        return http.post(f"/v1/workspaces/{TEAM}/cowork/drain", params=params)


def notes(prefix: str, count: int, size: int) -> list[str]:
    return [f"{prefix} {i}: " + "x" * (size - len(f"{prefix} {i}: ")) for i in range(count)]


def memctl(url: str, secret: str, *argv: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["XDG_CONFIG_HOME"] = "/nonexistent"
    return subprocess.run(
        [sys.executable, "-m", "memctl", "--url", url, "--token", secret, *argv],
        capture_output=True,
        timeout=60,
        env=env,
        input=b"",
    )


# --------------------------------------------------------------------------- JSON API


def test_a_drain_within_max_bytes_leaves_the_rest_waiting_and_counts_them(
    daemon: LiveDaemon,
) -> None:
    sender, (bob, secret) = pair(daemon, "api")
    sent = notes("api", 3, 3000)
    for content in sent:
        push(daemon, sender, bob, content)
    first = drain(daemon, secret, max_bytes=6500).json()
    assert [m["content"] for m in first["messages"]] == sent[:2]
    assert first["count"] == 2 and first["remaining"] == 1
    second = drain(daemon, secret, max_bytes=6500).json()
    assert [m["content"] for m in second["messages"]] == sent[2:] and second["remaining"] == 0
    assert drain(daemon, secret).json() == {**second, "count": 0, "messages": []}


def test_the_oldest_message_comes_over_the_budget_unless_the_budget_is_strict(
    daemon: LiveDaemon,
) -> None:
    sender, (bob, secret) = pair(daemon, "first")
    push(daemon, sender, bob, "y" * 8192)
    strict = drain(daemon, secret, max_bytes=100, at_least_one="false").json()
    assert strict["messages"] == [] and strict["remaining"] == 1
    taken = drain(daemon, secret, max_bytes=100).json()
    assert [len(m["content"]) for m in taken["messages"]] == [8192] and taken["remaining"] == 0


def test_a_drain_without_a_budget_takes_everything(daemon: LiveDaemon) -> None:
    sender, (bob, secret) = pair(daemon, "all")
    for content in notes("all", 4, 8000):
        push(daemon, sender, bob, content)
    answer = drain(daemon, secret).json()
    assert answer["count"] == 4 and answer["remaining"] == 0


@pytest.mark.parametrize(("name", "value"), [("max_bytes", "-1"), ("at_least_one", "maybe")])
def test_a_bad_budget_is_refused_and_takes_nothing(
    daemon: LiveDaemon, name: str, value: str
) -> None:
    sender, (bob, secret) = pair(daemon, f"bad-{name}")
    push(daemon, sender, bob, "still here")
    refused = drain(daemon, secret, **{name: value})
    assert refused.status_code == 422 and refused.json()["error"]["detail"]["field"] == name
    assert [m["content"] for m in drain(daemon, secret).json()["messages"]] == ["still here"]


# --------------------------------------------------------------------------- memctl as a hook


def drain_until_empty(daemon: LiveDaemon, secret: str, *argv: str) -> tuple[list[str], list[str]]:
    """Every drain's stdout until one prints nothing, and the contents they delivered."""
    outputs: list[str] = []
    for _ in range(20):
        done = memctl(daemon.url, secret, "cowork", "drain", *argv)
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        if not done.stdout:
            break
        outputs.append(done.stdout.decode())
    delivered = [
        line.split(": ", 1)[1]
        for text in outputs
        for line in text.splitlines()
        if line.startswith("- ")
    ]
    return outputs, delivered


def test_a_prompt_drain_prints_within_its_budget_and_the_rest_comes_next_prompt(
    daemon: LiveDaemon,
) -> None:
    sender, (bob, secret) = pair(daemon, "hook")
    sent = notes("team", 4, 2000)
    other = notes("other", 4, 2000)
    for content in sent:
        push(daemon, sender, bob, content)
    for content in other:
        push(daemon, sender, bob, content, OTHER)
    outputs, delivered = drain_until_empty(daemon, secret, "--format", "plain")
    assert all(len(text.encode()) <= PROMPT_BUDGET for text in outputs)
    assert sorted(delivered) == sorted(sent + other)  # every one, exactly once
    assert len(outputs) > 1
    first_lines = outputs[0].rstrip("\n").splitlines()
    taken = sum(line.startswith("- ") for line in first_lines)
    assert first_lines[-1] == f"{8 - taken} more messages {WAITING}"
    assert WAITING not in outputs[-1]


def test_large_messages_in_two_workspaces_come_one_prompt_at_a_time(daemon: LiveDaemon) -> None:
    sender, (bob, secret) = pair(daemon, "large")
    sent = notes("big", 4, 8000)
    for content in sent[:2]:
        push(daemon, sender, bob, content)
    for content in sent[2:]:
        push(daemon, sender, bob, content, OTHER)
    outputs, delivered = drain_until_empty(daemon, secret, "--format", "plain")
    assert len(outputs) == 4 and sorted(delivered) == sorted(sent)
    assert all(len(text) <= INLINE_LIMIT for text in outputs)
    assert outputs[0].rstrip("\n").endswith(f"3 more messages {WAITING}")
    assert outputs[2].rstrip("\n").endswith(f"1 more message {WAITING}")


def test_hook_json_keeps_to_the_budget_and_names_what_waits(daemon: LiveDaemon) -> None:
    sender, (bob, secret) = pair(daemon, "codex")
    for content in notes("codex", 6, 2000):
        push(daemon, sender, bob, content)
    done = memctl(daemon.url, secret, "-w", TEAM, "cowork", "drain", "--format", "hook-json")
    assert done.returncode == 0 and len(done.stdout) <= PROMPT_BUDGET
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.count("\n- ") == 3
    assert context.endswith(f"3 more messages {WAITING}")


def test_max_bytes_bounds_a_json_drain_by_content(daemon: LiveDaemon) -> None:
    sender, (bob, secret) = pair(daemon, "json")
    for content in notes("json", 5, 1000):
        push(daemon, sender, bob, content)
    done = memctl(
        daemon.url, secret, "-w", TEAM, "cowork", "drain", "--json", "--max-bytes", "2500"
    )
    answer = json.loads(done.stdout)
    assert len(answer["messages"]) == 2 and answer["remaining"] == 3


def test_a_large_hook_payload_on_stdin_is_read_and_never_breaks_the_pipe(
    daemon: LiveDaemon,
) -> None:
    sender, (bob, secret) = pair(daemon, "stdin")
    push(daemon, sender, bob, "hello")
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "p" * 200_000})
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["XDG_CONFIG_HOME"] = "/nonexistent"
    argv = ["--url", daemon.url, "--token", secret, "-w", TEAM, "cowork", "drain"]
    process = subprocess.Popen(
        [sys.executable, "-m", "memctl", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None
    data, written = payload.encode(), 0
    while written < len(data):  # raw writes, as an agent CLI writes a hook's input
        written += os.write(process.stdin.fileno(), data[written : written + 65536])
    process.stdin.close()
    process.stdin = None
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert b"from stdin-from in team-coding: hello" in out


@pytest.mark.parametrize("fmt", ["plain", "hook-json"])
def test_line_breaks_and_quotes_count_as_printed(daemon: LiveDaemon, fmt: str) -> None:
    sender, (bob, secret) = pair(daemon, f"wide-{fmt}")
    sent = ['a\n"' * 700 + f"#{n}" for n in range(4)]  # 2,100 bytes that print wider
    for content in sent:
        push(daemon, sender, bob, content)
    outputs, _ = drain_until_empty(daemon, secret, "-w", TEAM, "--format", fmt)
    assert len(outputs) > 1 and all(len(text.encode()) <= PROMPT_BUDGET for text in outputs), [
        len(text.encode()) for text in outputs
    ]
