"""The session-end hook against a real daemon with a transcript larger than one request:
its parts go as one upload that the daemon joins, so the transcript is chunked whole,
cited by its own name, and no exchange is split at a part's seam."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memctl.hooks import PART_BYTES
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM = "team-coding"
EXCHANGES = 500


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("hooks-large")
    with start_daemon(root, copy_examples(root / "ws", [TEAM])) as live:
        yield live


def transcript(exchanges: int) -> str:
    lines = []
    for n in range(exchanges):
        question = f"exchange {n}: why does batch {n} of the ledger import drift " + "x" * 1800
        answer = f"answer {n}: the rounding of batch {n} happens before conversion " + "y" * 1800
        lines.append(json.dumps({"type": "user", "message": {"role": "user", "content": question}}))
        lines.append(
            json.dumps({"type": "assistant", "message": {"role": "assistant", "content": answer}})
        )
    return "\n".join(lines) + "\n"


def end_hook(daemon: LiveDaemon, path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env.update(MEMHUB_URL=daemon.url, MEMHUB_TOKEN=daemon.admin_token)
    return subprocess.run(
        [sys.executable, "-m", "memctl", "hooks", "session-end", "-w", TEAM],
        input=json.dumps({"hook_event_name": "SessionEnd", "transcript_path": str(path)}),
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def test_a_transcript_larger_than_a_part_is_chunked_whole(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    # Given a transcript of several parts
    path = tmp_path / "-home-ana-src-ledger" / "session.jsonl"
    path.parent.mkdir()
    path.write_text(transcript(EXCHANGES))
    assert path.stat().st_size > 2 * PART_BYTES

    # When the end hook ingests it
    done = end_hook(daemon, path)

    # Then it is one source of one drawer per exchange, each question with its answer
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert f"-home-ana-src-ledger/session.jsonl: {EXCHANGES} new chunk(s)" in done.stderr
    with daemon.http(daemon.admin_token) as http:
        hits = http.post(
            f"/v1/workspaces/{TEAM}/recall/search",
            json={"query": "exchange 112 batch 112", "limit": 3},
        ).json()["hits"]
    top = hits[0]
    assert top["source_file"] == "-home-ana-src-ledger/session.jsonl"
    assert "exchange 112:" in top["content"] and "answer 112:" in top["content"]

    # and an unchanged transcript stores nothing more
    again = end_hook(daemon, path)
    assert "session.jsonl: 0 new chunk(s)" in again.stderr, again.stderr


def test_a_transcript_the_daemon_skips_is_said_so_not_as_no_new_chunks(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    path = tmp_path / "proj" / "settings.jsonl"
    path.parent.mkdir()
    path.write_text('{"a": 1}\n')  # JSON lines of no known transcript
    done = end_hook(daemon, path)
    assert done.returncode == 0 and done.stdout == ""
    assert "not a known export" in done.stderr and "new chunk" not in done.stderr
