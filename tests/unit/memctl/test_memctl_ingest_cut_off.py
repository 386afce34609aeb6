"""A daemon gone mid-ingest (stopped for a restart after answering some requests): memctl
says so in one line with what was stored by then, as for Ctrl-C, exits 2 as for any
unreachable daemon, and with --json prints one error envelope carrying both."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from memctl_fakes import ONE_FILE_INGESTED, Canned, FakeDaemon, Seen, handler_for, run_in_thread

from memctl.cli import main

pytestmark = pytest.mark.usefixtures("no_client_config")

INGEST = "/v1/workspaces/team/recall/ingest"
ANSWER = ONE_FILE_INGESTED


@pytest.fixture
def stopping_daemon() -> Iterator[FakeDaemon]:
    """A canned daemon that stops listening once it has answered the first ingest
    request: the next one finds the port closed, as during a restart."""
    daemon = FakeDaemon(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(daemon))
    server.daemon_threads = True
    daemon.url = f"http://127.0.0.1:{server.server_address[1]}"

    def first_then_stop(_seen: Seen) -> Canned:
        # Answered on the connection already open; new ones are refused from now on.
        # (This runs in a thread of its own, not serve_forever's: shutdown may wait.)
        server.shutdown()
        server.server_close()
        return Canned(ANSWER)

    daemon.on("POST", INGEST, first_then_stop)
    run_in_thread(server)
    yield daemon
    server.server_close()


def _ingest(daemon: FakeDaemon, tmp_path: Path, *extra: str) -> int:
    (tmp_path / "a.md").write_text("first file\n" * 50)
    (tmp_path / "b.md").write_text("second file\n" * 50)
    files = [str(tmp_path / "a.md"), str(tmp_path / "b.md")]
    return main(
        ["--url", daemon.url, "-w", "team", "recall", "ingest", *files, "--request-bytes", "700"]
        + list(extra)
    )


def test_an_ingest_cut_off_by_a_restart_says_what_was_stored_by_then(
    stopping_daemon: FakeDaemon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two files sent in two requests, the daemon stopping after answering the first
    code = _ingest(stopping_daemon, tmp_path)
    out, err = capsys.readouterr()
    # Then exit 2, one line saying the daemon is unreachable and what was stored
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"memctl: cannot reach memhubd at {stopping_daemon.url} ")
    assert "; stored before it: files=1 chunks=3 duplicates=0 replaced=0; " in err
    assert "run the same ingest again" in err


def test_an_ingest_cut_off_by_a_restart_prints_one_envelope_with_json(
    stopping_daemon: FakeDaemon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _ingest(stopping_daemon, tmp_path, "--json")
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1
    error = json.loads(out)["error"]  # one document: a second would not load
    assert error["code"] == "unreachable"
    assert error["detail"]["url"] == stopping_daemon.url
    assert (error["detail"]["files"], error["detail"]["chunks"]) == (1, 3)
    assert (error["detail"]["sources"], error["detail"]["failed"]) == (["a.md"], [])


def test_an_ingest_that_reached_no_daemon_says_only_that(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], closed_port_url: str
) -> None:
    daemon = FakeDaemon(url=closed_port_url)
    assert _ingest(daemon, tmp_path) == 2
    _out, err = capsys.readouterr()
    assert err.startswith(f"memctl: cannot reach memhubd at {closed_port_url} ")
    assert "stored before it" not in err


REFUSED = Canned(
    {"error": {"code": "workspace_unavailable", "message": "disk full", "detail": {}}},
    status=503,
)
ODD = Canned([])  # a list where the ingest answer is an object


@pytest.mark.parametrize(
    ("second", "code", "exit_code"),
    [(REFUSED, "workspace_unavailable", 2), (ODD, "internal", 2)],
    ids=["refused", "another shape"],
)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_an_ingest_the_daemon_stops_mid_way_says_what_was_stored_by_then(
    fake_daemon: FakeDaemon,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    second: Canned,
    code: str,
    exit_code: int,
    as_json: bool,
) -> None:
    # Given two files sent in two requests, the second refused or answered oddly
    answers = iter([Canned(ANSWER), second])
    fake_daemon.on("POST", INGEST, lambda _seen: next(answers))
    assert _ingest(fake_daemon, tmp_path, *(["--json"] if as_json else [])) == exit_code
    out, err = capsys.readouterr()
    # Then one line with the daemon's error and what was stored before it
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"memctl: {code}: ")
    assert "; stored before it: files=1 chunks=3 duplicates=0 replaced=0; " in err
    if as_json:
        error = json.loads(out)["error"]  # one document
        assert error["code"] == code
        assert (error["detail"]["files"], error["detail"]["chunks"]) == (1, 3)
    else:
        assert out == ""


def test_an_answer_memctl_cannot_read_is_not_counted_as_stored(
    fake_daemon: FakeDaemon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a second answer with counts but a report list of another shape
    odd = Canned({"files": 1, "chunks": 5, "sources": ["b.md"]})
    answers = iter([Canned(ANSWER), odd])
    fake_daemon.on("POST", INGEST, lambda _seen: next(answers))
    assert _ingest(fake_daemon, tmp_path, "--json") == 2
    detail = json.loads(capsys.readouterr().out)["error"]["detail"]
    # Then only the first answer's counts are said to be stored
    assert (detail["files"], detail["chunks"], detail["sources"]) == (1, 3, ["a.md"])


def test_a_dry_run_stopped_mid_way_says_nothing_was_stored(
    fake_daemon: FakeDaemon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = iter([Canned({**ANSWER, "dry_run": True}), REFUSED])
    fake_daemon.on("POST", INGEST, lambda _seen: next(answers))
    assert _ingest(fake_daemon, tmp_path, "--dry-run") == 2
    err = capsys.readouterr().err
    assert "stored before it" not in err
    assert "a dry run, nothing stored; counted before it: files=1 chunks=3 " in err


def test_a_token_refused_mid_way_keeps_memctls_hint(
    fake_daemon: FakeDaemon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = Canned(
        {"error": {"code": "unauthorized", "message": "unknown token", "detail": {}}},
        status=401,
    )
    answers = iter([Canned(ANSWER), refused])
    fake_daemon.on("POST", INGEST, lambda _seen: next(answers))
    assert _ingest(fake_daemon, tmp_path, "--token", "x") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "; stored before it: files=1 chunks=3 " in err
    assert "the daemon does not know this token" in err


@pytest.mark.parametrize(
    "odd",
    [
        {"near_duplicates": [{"similar_drawer_id": "x", "similarity": 0.99, "preview": "p"}]},
        {"skipped": [{"source": "b.md"}]},
        {"failed": [{"reason": "unreadable"}]},
        {"sources": [{"source": "b.md", "warnings": "one string"}]},
        {"sources": [{"warnings": ["a warning"]}]},
        {"files": True},
        {"chunks": False},
        {"skipped": {"source": "b.md", "reason": "binary"}},
    ],
    ids=["near-duplicate-id", "skip-reason", "failed-source", "warnings-string",
         "warning-source", "files-bool", "chunks-bool", "skipped-object"],
)  # fmt: skip
def test_an_answer_missing_what_is_printed_is_told_with_what_was_stored(
    fake_daemon: FakeDaemon, tmp_path: Path, capsys: pytest.CaptureFixture[str], odd: dict
) -> None:
    # Given a second answer lacking a field its summary prints, or of another type
    answers = iter([Canned(ANSWER), Canned({**ANSWER, **odd})])
    fake_daemon.on("POST", INGEST, lambda _seen: next(answers))
    assert _ingest(fake_daemon, tmp_path, "--json") == 2
    error = json.loads(capsys.readouterr().out)["error"]
    # Then it is the daemon's unexpected answer, told with the first answer's stored counts
    assert error["code"] == "internal"
    assert (error["detail"]["files"], error["detail"]["chunks"]) == (1, 3)
    assert error["detail"]["sources"] == ["a.md"]
