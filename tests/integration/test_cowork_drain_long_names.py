"""`memctl cowork drain` keeps its printed text within `--max-bytes` however many
messages come and however long their senders' and workspaces' names are (64 characters,
the most either may have): the daemon weighs each message as its whole printed line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

AGENT = "read:summary,read:search,write:recall"
LONG_WS = ("w" * 64, "v" * 64)
PROMPT_BUDGET = 8000  # memctl's default for the prompt formats


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("cowork-long-names")
    copies = copy_examples(root / "ws", ["team-coding", "writing"])
    with start_daemon(root, dict(zip(LONG_WS, copies.values(), strict=True))) as live:
        yield live


def fill(daemon: LiveDaemon, prefix: str, size: int) -> tuple[str, list[str]]:
    """A recipient's secret, its inbox in both workspaces full (16 messages each) from a
    sender of a 64-character name, and what was sent."""
    sender = daemon.add_token((prefix + "-" + "s" * 64)[:64], AGENT, workspaces=list(LONG_WS))
    name = (prefix + "-" + "r" * 64)[:64]
    secret = daemon.add_token(name, AGENT, workspaces=list(LONG_WS))
    sent = []
    with daemon.http(sender) as http:
        for ws in LONG_WS:
            for n in range(16):
                content = f"{ws[0]}{n:02}:" + "x" * (size - 4)
                answer = http.post(
                    f"/v1/workspaces/{ws}/cowork/push", json={"to": name, "content": content}
                )
                assert answer.status_code == 201, answer.text
                sent.append(content)
    return secret, sent


def drain_until_empty(daemon: LiveDaemon, secret: str, *argv: str) -> tuple[list[bytes], int]:
    """Every drain's stdout until one prints nothing, and how many messages they held."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["XDG_CONFIG_HOME"] = "/nonexistent"
    outputs: list[bytes] = []
    for _ in range(40):
        done = subprocess.run(
            [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", secret]
            + ["cowork", "drain", *argv],
            capture_output=True,
            timeout=60,
            env=env,
            input=b"",
        )
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        if not done.stdout:
            break
        outputs.append(done.stdout)
    messages = 0
    for out in outputs:
        text = out.decode()
        if argv[1] == "hook-json":
            text = json.loads(text)["hookSpecificOutput"]["additionalContext"]
        messages += sum(line.startswith("- ") for line in text.splitlines())
    return outputs, messages


@pytest.mark.parametrize("fmt", ["plain", "hook-json"])
def test_the_default_budget_holds_with_the_longest_names(daemon: LiveDaemon, fmt: str) -> None:
    secret, sent = fill(daemon, f"d{fmt[0]}", 476)
    outputs, delivered = drain_until_empty(daemon, secret, "--format", fmt)
    sizes = [len(out) for out in outputs]
    assert all(size <= PROMPT_BUDGET for size in sizes), sizes
    assert delivered == len(sent) and len(outputs) > 2


@pytest.mark.parametrize("fmt", ["plain", "hook-json"])
def test_a_small_budget_holds_with_many_small_messages(daemon: LiveDaemon, fmt: str) -> None:
    secret, sent = fill(daemon, f"s{fmt[0]}", 5)
    outputs, delivered = drain_until_empty(daemon, secret, "--format", fmt, "--max-bytes", "800")
    sizes = [len(out) for out in outputs]
    assert all(size <= 800 for size in sizes), sizes
    assert delivered == len(sent)
