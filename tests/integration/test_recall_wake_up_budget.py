"""Wake-up's `drawers` lists exactly the drawers its text shows: a budget that cuts the
text leaves out the drawers cut off, and the text stays within the budget."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM = "team-coding"
NOTES = 30


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("wake-budget")
    workspaces = copy_examples(root / "ws", [TEAM])
    with start_daemon(root, workspaces) as live:
        with live.http(live.admin_token, timeout=60) as http:
            for n in range(NOTES):
                note = {"content": f"note {n}: the deploy checklist item number {n} " * 3}
                answer = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json=note)
                assert answer.status_code == 201, answer.text
        yield live


def wake_up(daemon: LiveDaemon, **params: object) -> dict:
    with daemon.http(daemon.admin_token) as http:
        answer = http.get(f"/v1/workspaces/{TEAM}/recall/wake-up", params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.mark.parametrize("budget", [200, 500, 1200])
def test_a_small_budget_lists_only_the_drawers_its_text_shows(
    daemon: LiveDaemon, budget: int
) -> None:
    wake = wake_up(daemon, limit=50, budget=budget)
    text = wake["text"]
    assert wake["truncated"] and len(text) <= budget
    listed = [d["drawer_id"] for d in wake["drawers"]]
    assert len(listed) < NOTES
    assert listed or budget < 500  # a few drawers fit in 500 characters
    for drawer in wake["drawers"]:
        assert f"- {drawer['room']} {drawer['drawer_id']} (importance " in text
    # Every drawer whose line the text shows whole is listed, in the text's order.
    whole = [
        line.split()[2]
        for line in text.splitlines()
        if line.startswith("- ") and re.search(r" \(importance \d+\)", line)
    ]
    assert whole == listed


def test_a_budget_that_fits_lists_every_drawer(daemon: LiveDaemon) -> None:
    wake = wake_up(daemon, limit=50, budget=100_000)
    assert not wake["truncated"]
    assert len(wake["drawers"]) == NOTES
    assert all(d["drawer_id"] in wake["text"] for d in wake["drawers"])


def test_aaak_lists_every_drawer_of_its_document(daemon: LiveDaemon) -> None:
    wake = wake_up(daemon, limit=10, budget=200, format="aaak")
    assert len(wake["drawers"]) == 10
