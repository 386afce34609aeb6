"""A prompt hook's drain keeps to its byte budget when messages hold characters JSON
escapes (tabs, quotes, backslashes): the daemon weighs each as memctl prints it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.integration.test_cowork_drain_budget import (
    PROMPT_BUDGET,
    TEAM,
    drain_until_empty,
    pair,
    push,
)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("cowork-escapes")
    with start_daemon(root, copy_examples(root / "ws", [TEAM])) as live:
        yield live


@pytest.mark.parametrize(
    ("label", "content"),
    [("tabs", "a" + "\t" * 2600 + "b"), ("backslashes", "a" + '\\\t"' * 900 + "b")],
)
def test_a_hook_json_drain_of_escaped_characters_keeps_to_its_budget(
    daemon: LiveDaemon, label: str, content: str
) -> None:
    sender, (bob, secret) = pair(daemon, f"escape-{label}")
    for _ in range(3):
        push(daemon, sender, bob, content)
    outputs, _ = drain_until_empty(daemon, secret, "-w", TEAM, "--format", "hook-json")
    sizes = [len(text.rstrip("\n").encode()) for text in outputs]
    assert len(outputs) > 1 and all(size <= PROMPT_BUDGET for size in sizes), sizes
    delivered = [
        line
        for text in outputs
        for line in json.loads(text)["hookSpecificOutput"]["additionalContext"].splitlines()
        if line.startswith("- ")
    ]
    assert len(delivered) == 3 and all(line.endswith(content) for line in delivered)
