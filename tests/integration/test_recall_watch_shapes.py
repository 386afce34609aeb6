"""Watched transcript directories and the shapes files arrive in: a JSON document with
no final newline, a directory moved in whole, files written under a temporary name and
renamed, editor backups and build output (left alone by the start's scan and by events
alike)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from memhubd.runtime.config import ConfigError, load_config
from memhubd.service.recall import _complete_lines
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures/recall"
SESSION = FIXTURES / "claude-code/3b1f6c2e-9a41-4d2b-8c77-0e5d2f9a1b34.jsonl"
WS = "team-coding"


# Words of every file these tests write: a search for them finds every drawer.
WORDS = "backoff jitter pager threshold backup generated build output conversation the a"


def sources(daemon: LiveDaemon) -> dict[str, str]:
    """The source file of every live drawer, with its kind."""
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(
            f"/v1/workspaces/{WS}/recall/search", json={"query": WORDS, "limit": 100}
        )
    assert answer.status_code == 200, answer.text
    return {hit["source_file"]: hit["source_kind"] for hit in answer.json()["hits"]}


def wait_for(daemon: LiveDaemon, check: Any, timeout: float = 15.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        found = sources(daemon)
        if check(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


@pytest.fixture
def watched(tmp_path: Path) -> Any:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "first.jsonl").write_text(SESSION.read_text())
    (inbox / "notes.md~").write_text("# Backup\n\nAn editor's backup copy, never a source.\n")
    workspaces: dict[str, Any] = copy_examples(tmp_path / "ws", [WS])
    workspaces[WS] = {"path": workspaces[WS], "recall": {"watch": [str(inbox)]}}
    with start_daemon(tmp_path, workspaces) as daemon:
        assert wait_for(daemon, lambda s: "inbox/first.jsonl" in s)
        yield daemon, inbox


def test_a_json_document_without_a_final_newline_is_ingested_whole(watched: Any) -> None:
    daemon, inbox = watched
    conversation = json.loads((FIXTURES / "chatgpt/conversations.json").read_text())[0]
    (inbox / "one.json").write_text(json.dumps(conversation, indent=2))  # no final newline
    found = wait_for(daemon, lambda s: "inbox/one.json" in s)
    assert found["inbox/one.json"] == "chatgpt", found


def test_a_directory_moved_in_whole_is_ingested(watched: Any, tmp_path: Path) -> None:
    daemon, inbox = watched
    outside = tmp_path / "project-x"
    outside.mkdir()
    (outside / "second.jsonl").write_text(SESSION.read_text().replace("backoff", "jitter"))
    os.rename(outside, inbox / "project-x")
    found = wait_for(daemon, lambda s: "inbox/project-x/second.jsonl" in s)
    assert "inbox/project-x/second.jsonl" in found, found


def test_temporary_names_backups_and_build_output_are_never_sources(watched: Any) -> None:
    daemon, inbox = watched
    temporary = inbox / "oncall.md.4f2a.tmp"
    temporary.write_text("# On call\n\nThe pager threshold is 0.82 of capacity.\n")
    time.sleep(0.5)  # long enough for an event about the temporary name
    os.rename(temporary, inbox / "oncall.md")
    (inbox / "build").mkdir()
    (inbox / "build" / "out.md").write_text("# Build output\n\nGenerated, not said.\n")
    (inbox / "oncall.md~").write_text("# On call\n\nAn old threshold of 0.91.\n")
    found = wait_for(daemon, lambda s: "inbox/oncall.md" in s)
    time.sleep(1.0)  # events about the others would have been ingested by now
    found = sources(daemon)
    assert sorted(found) == ["inbox/first.jsonl", "inbox/oncall.md"], found


def test_two_watched_directories_of_one_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a" / "notes").mkdir(parents=True)
    (tmp_path / "b" / "notes").mkdir(parents=True)
    ws = copy_examples(tmp_path / "ws", [WS])[WS]
    table = {
        "path": ws,
        "recall": {"watch": [str(tmp_path / "a/notes"), str(tmp_path / "b/notes")]},
    }
    with pytest.raises(ConfigError, match="two directories called 'notes'"):
        load_config(None, {"workspaces": {WS: table}})


@pytest.mark.parametrize(
    ("text", "now"),
    [
        ('{"a": 1}\n{"b": 2}\n{"c": 3', '{"a": 1}\n{"b": 2}\n'),  # a line being written
        ('{"a": 1}\n{"b": 2}', '{"a": 1}\n{"b": 2}'),  # the last line whole
        ('{\n  "a": [1, 2]\n}', '{\n  "a": [1, 2]\n}'),  # a document, no final newline
        ('{\n  "a": [1,', ""),  # a document being written
        ('{"a": 1}\n', '{"a": 1}\n'),
        ("# notes\nno newline", "# notes\nno newline"),
    ],
)
def test_what_of_a_watched_file_is_ingested_now(text: str, now: str) -> None:
    assert _complete_lines(text) == now


def test_skipped_files_are_logged_once_each_and_remembered_within_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd.service import recall

    logged: list[str] = []
    monkeypatch.setattr(recall, "_SKIPS_LOGGED", {})
    monkeypatch.setattr(recall, "SKIPS_REMEMBERED", 10)
    monkeypatch.setattr(recall.log, "info", lambda event, **fields: logged.append(fields["path"]))
    big = tmp_path / "big.jsonl"
    big.write_text("x" * 100)
    for _ in range(3):
        recall._skipped_once(str(big), "larger than 10 bytes")
    assert logged == [str(big)]
    big.write_text("x" * 200)  # its size changed: said again
    recall._skipped_once(str(big), "larger than 10 bytes")
    assert logged == [str(big)] * 2
    for n in range(50):
        recall._skipped_once(str(tmp_path / f"f{n}"), "binary file")
    assert len(recall._SKIPS_LOGGED) == 10


def test_a_transcript_with_a_byte_that_is_not_utf8_early_on_is_ingested(watched: Any) -> None:
    daemon, inbox = watched
    line = json.dumps({"type": "user", "message": {"role": "user", "content": "caf\u00e9 pager"}})
    (inbox / "latin.jsonl").write_bytes(
        line.replace("\\u00e9", "X").encode().replace(b"X", b"\xe9") + b"\n"
    )
    found = wait_for(daemon, lambda s: "inbox/latin.jsonl" in s)
    assert found.get("inbox/latin.jsonl") == "claude-code", found
