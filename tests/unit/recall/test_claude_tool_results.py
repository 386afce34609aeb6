"""Claude Code 2.x offloads a session's large tool outputs to `<session>/tool-results/`
beside `<session>.jsonl`. The session holds them already, cut as tool output is: a
directory ingest, the start's scan of a watched directory, its events and its polling
all leave that directory out, and nothing else of that name."""

from __future__ import annotations

from pathlib import Path

import pytest
from watchfiles import Change

from memhub_protocol.recall import skipped_directory, walk_sources
from memhubd.service import recall

SESSION = "aa11bb22-3333-4444-8555-666677778888"
LINE = '{"type":"user","message":{"role":"user","content":"Why is the orchard relay stuck?"}}\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A Claude Code project directory: a session, its subagent and its offloaded output,
    and beside it a notes directory that happens to hold a `tool-results` of its own."""
    root = tmp_path / "-home-dev-orchard"
    (root / SESSION / "subagents").mkdir(parents=True)
    (root / SESSION / "tool-results").mkdir()
    (root / f"{SESSION}.jsonl").write_text(LINE)
    (root / SESSION / "subagents" / "agent-a1b2.jsonl").write_text(LINE)
    (root / SESSION / "tool-results" / "b7xq2kd9a.txt").write_text("M relay.py\n" * 5000)
    (root / "notes" / "tool-results").mkdir(parents=True)
    (root / "notes" / "tool-results" / "summary.md").write_text("# Results\n\nAll green.\n")
    return root


def test_a_directory_ingest_leaves_out_a_sessions_offloaded_tool_results(project: Path) -> None:
    walked = [source.name for source in walk_sources([str(project)])]

    assert walked == [
        f"{SESSION}.jsonl",
        f"{SESSION}/subagents/agent-a1b2.jsonl",
        "notes/tool-results/summary.md",
    ]
    assert skipped_directory(str(project / SESSION / "tool-results"))
    assert not skipped_directory(str(project / "notes" / "tool-results"))


def test_the_watch_leaves_out_a_sessions_tool_results_and_what_is_in_it(project: Path) -> None:
    keep = recall._WatchFilter(str(project))
    offloads = project / SESSION / "tool-results"

    assert not keep(Change.added, str(offloads / "b7xq2kd9a.txt"))
    assert not keep(Change.added, str(offloads))  # moved in whole
    assert keep(Change.added, str(project / SESSION / "subagents" / "agent-a1b2.jsonl"))
    assert keep(Change.added, str(project / "notes" / "tool-results" / "summary.md"))
    assert recall._WatchScope(str(project)).relative(str(offloads / "b7xq2kd9a.txt")) is None


def test_polling_a_watched_directory_leaves_out_a_sessions_tool_results(project: Path) -> None:
    poller = recall._Poller("team", str(project), (0, 0))

    assert sorted(Path(p).relative_to(project).as_posix() for p in poller.changed()) == [
        f"{SESSION}.jsonl",
        f"{SESSION}/subagents/agent-a1b2.jsonl",
        "notes/tool-results/summary.md",
    ]
