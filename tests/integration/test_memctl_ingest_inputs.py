"""`memctl recall ingest` on awkward input against a real daemon: a file name that is
not UTF-8 fails alone and the rest is ingested; a text with a stray Latin-1 byte is
text, from a file as from stdin, as the watcher and the session-end hook read it; two
unrelated texts from stdin are two sources, and neither retires the other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memctl.recall import stdin_citation
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
LINE = b"the deploy runs from the release branch only, never from a laptop\n"


pytestmark = pytest.mark.usefixtures("no_user_config")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("ingest-inputs")
    with start_daemon(root, copy_examples(root / "ws", [WS])) as live:
        yield live


def ingest(daemon: LiveDaemon, *argv: str, stdin: bytes = b"") -> tuple[int, dict, str]:
    return recall(daemon, "ingest", *argv, "--dry-run", stdin=stdin)


def recall(daemon: LiveDaemon, *argv: str, stdin: bytes = b"") -> tuple[int, dict, str]:
    result = subprocess.run(
        [sys.executable, "-m", "memctl", "--url", daemon.socket_url, "-w", WS, "recall"]
        + [*argv, "--json"],
        input=stdin,
        capture_output=True,
        timeout=60,
    )
    return result.returncode, json.loads(result.stdout), result.stderr.decode()


def test_a_file_name_that_is_not_utf8_fails_and_the_rest_is_ingested(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    # given a directory with a Latin-1 file name beside a good file
    Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9.md")).write_text("hi\n")
    (tmp_path / "good.md").write_text("ok, this one goes\n")
    # when the directory is ingested
    code, totals, err = ingest(daemon, str(tmp_path))
    # then the bad name is reported failed and the good file is ingested
    assert code == 1, err
    assert totals["failed"] == [{"source": "caf\ufffd.md", "reason": "file name is not UTF-8"}]
    assert [s["source"] for s in totals["sources"]] == ["good.md"]
    assert totals["files"] == 1


def test_a_text_file_with_one_latin1_byte_is_ingested(daemon: LiveDaemon, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(LINE * 10 + b"caf\xe9\n")
    code, totals, err = ingest(daemon, str(tmp_path / "notes.txt"))
    assert (code, totals["failed"], totals["skipped"]) == (0, [], []), err
    assert totals["files"] == 1


def test_stdin_with_one_latin1_byte_is_ingested_as_a_file_is(daemon: LiveDaemon) -> None:
    code, totals, err = ingest(daemon, "-", stdin=LINE * 10 + b"caf\xe9\n")
    assert (code, totals["failed"], totals["skipped"]) == (0, [], []), err
    assert totals["files"] == 1


def test_mostly_bad_bytes_are_binary_from_a_file_and_from_stdin(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    data = b"\xe9\xff" * 200 + LINE
    (tmp_path / "blob.txt").write_bytes(data)
    cited = (["-"], data, stdin_citation(data))
    for argv, stdin, name in (([str(tmp_path)], b"", "blob.txt"), cited):
        code, totals, err = ingest(daemon, *argv, stdin=stdin)
        assert code == 0, err
        assert totals["skipped"] == [{"source": name, "reason": "binary file"}]


def test_two_unrelated_stdin_ingests_are_two_sources_and_both_stay_searchable(
    daemon: LiveDaemon,
) -> None:
    # given two unrelated notes, each piped in without --source
    first = b"The staging database password rotates every Tuesday.\n"
    second = b"The release train leaves on Thursdays at noon.\n"
    for note in (first, second):
        code, totals, err = recall(daemon, "ingest", "-", stdin=note)
        # then neither retires the other
        assert (code, totals["chunks"], totals["replaced"]) == (0, 1, 0), err
        assert [s["source"] for s in totals["sources"]] == [stdin_citation(note)]
    # and both are found
    for query, note in (("staging database password", first), ("release train", second)):
        code, found, err = recall(daemon, "search", query, "--limit", "3")
        assert code == 0, err
        assert note.decode().strip() in [hit["content"].strip() for hit in found["hits"]]
    # when the first is piped in again, it is the same source, unchanged
    code, totals, err = recall(daemon, "ingest", "-", stdin=first)
    assert (code, totals["chunks"], totals["duplicates"], totals["replaced"]) == (0, 0, 1, 0), err


def test_stdin_is_cited_by_the_start_of_its_sha256() -> None:
    assert stdin_citation(b"hello\n") == "stdin:5891b5b522d5"
