"""memctl's output as docs/memctl.md promises it: text the daemon holds reaches the
terminal without escape sequences, a bad time or number is a usage error naming its
option whatever the command, error lines stay one line, a stream that ends early is a
failure, and a lost stdout is never taken for output given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from memctl_fakes import Canned, FakeDaemon

from memctl.cli import main

pytestmark = pytest.mark.usefixtures("no_client_config")

WS = "/v1/workspaces/team"
# OSC 52 (writes the clipboard), a screen clear, a C1 CSI and a bidi override.
HOSTILE = "zebra\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2Jfish\x9b31m\u202e"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _hit(content: str) -> dict[str, object]:
    return {
        "fused_score": 0.5,
        "workspace": "team",
        "room": "general",
        "drawer_id": "d1",
        "citation": "notes.md",
        "signals": {"bm25": {"rank": 1, "score": 1.0}},
        "content": content,
    }


def _triple(subject: str) -> dict[str, object]:
    return {
        "id": "t1",
        "subject": subject,
        "predicate": "uses",
        "object": HOSTILE,
        "valid_from": None,
        "valid_to": None,
    }


STORED_TEXT = [
    (["recall", "search", "zebrafish"], "POST", "/recall/search", {"hits": [_hit(HOSTILE)]}),
    (["recall", "wake-up"], "GET", "/recall/wake-up", {"text": f"identity\n{HOSTILE}"}),
    (
        ["recall", "show", "d1"],
        "GET",
        "/recall/drawers/d1",
        {
            "workspace": "team",
            "drawer": {
                "drawer_id": "d1",
                "room": "general",
                "source_file": "notes.md",
                "locator": None,
                "content": HOSTILE,
            },
        },
    ),
    (
        ["diary", "read"],
        "GET",
        "/diary",
        {
            "identity": "ann",
            "workspace": "team",
            "full": True,
            "entries": [{"type": "LESSON", "drawer_id": "d2", "shared": True, "text": HOSTILE}],
        },
    ),
    (["kg", "query"], "GET", "/kg/triples", {"triples": [_triple("api")]}),
    (
        ["kg", "timeline", "api"],
        "GET",
        "/kg/timeline",
        {"entity": "api", "triples": [_triple("api")]},
    ),
]


@pytest.mark.parametrize(("argv", "method", "path", "answer"), STORED_TEXT)
def test_stored_text_reaches_the_terminal_without_escape_sequences(
    fake_daemon: FakeDaemon,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    method: str,
    path: str,
    answer: dict[str, object],
) -> None:
    # Given an answer quoting text an agent stored with escape sequences in it
    fake_daemon.on(method, WS + path, Canned(answer))
    # When memctl prints it as text
    code, out, _ = run(capsys, "--url", fake_daemon.url, "-w", "team", *argv)
    # Then the text is there, and nothing that would act on a terminal
    assert code == 0
    assert "zebra]52;c;ZWNobyBwd25lZA==[2Jfish31m" in out
    assert not any(ch in out for ch in "\x1b\x07\x9b\u202e")


def test_the_json_form_keeps_stored_text_exactly(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("POST", WS + "/recall/search", Canned({"hits": [_hit(HOSTILE)]}))
    code, out, _ = run(
        capsys, "--url", fake_daemon.url, "-w", "team", "recall", "search", "x", "--json"
    )
    assert code == 0
    assert json.loads(out)["hits"][0]["content"] == HOSTILE


BAD_VALUES = [
    (["recall", "search", "x", "--since", "garbage"], "--since"),
    (["recall", "purge", "--before", "garbage"], "--before"),
    (["kg", "query", "--as-of", "garbage"], "--as-of"),
    (["kg", "add", "a", "b", "c", "--valid-from", "garbage"], "--valid-from"),
    (["kg", "invalidate", "t1", "--at", "garbage"], "--at"),
    (["fact-check", "--now", "garbage"], "--now"),
    (["cowork", "peek", "--since", "garbage"], "--since"),
    (["kg", "add", "a", "b", "c", "--confidence", "2"], "--confidence"),
    (["kg", "add", "a", "b", "c", "--confidence", "nan"], "--confidence"),
    (["token", "create", "x", "--scopes", "all", "--expires", ""], "--expires"),
    (["token", "create", "x", "--scopes", "all", "--expires", "garbage"], "--expires"),
    (["token", "create", "x", "--scopes", "all", "--expires", "30 days"], "--expires"),
    (["token", "create", "x", "--scopes", "all", "--expires", "\uff19d"], "--expires"),
]


@pytest.mark.parametrize(("argv", "option"), BAD_VALUES)
def test_a_bad_time_or_number_is_a_usage_error_naming_the_option(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str], argv: list[str], option: str
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--url", fake_daemon.url, "-w", "team", "--json", *argv])
    out, err = capsys.readouterr()
    assert stop.value.code == 2
    assert f"argument {option}" in err
    assert json.loads(out)["error"]["code"] == "usage"
    assert fake_daemon.seen == []  # refused before anything is sent


def test_cowork_peek_since_takes_epoch_seconds_as_every_time_option_does(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = {"partner": None, "workspace": "team"}
    fake_daemon.on("GET", WS + "/cowork/peek/auto", Canned(answer))
    code, _, _ = run(
        capsys, "--url", fake_daemon.url, "-w", "team", "cowork", "peek", "--since", "1796400000"
    )
    assert code == 0
    assert fake_daemon.seen[0].query["since"] == ["2026-12-04T16:00:00Z"]


def test_a_failed_ingest_source_is_told_on_stderr_too(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = str(tmp_path / "nonexistent")
    code, out, err = run(
        capsys, "--url", fake_daemon.url, "-w", "team", "recall", "ingest", missing
    )
    assert code == 1
    assert f"failed  {missing}: " in out
    assert err.startswith(f"memctl: failed  {missing}: ")


def test_removing_an_unknown_workspace_does_not_suggest_w(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    error = {
        "code": "workspace_not_found",
        "message": "unknown workspace 'nosuch'",
        "detail": {"available": ["team"]},
    }
    fake_daemon.on("DELETE", "/v1/workspaces/nosuch", Canned({"error": error}, status=404))
    code, _, err = run(capsys, "--url", fake_daemon.url, "workspaces", "remove", "nosuch")
    assert code == 1
    assert err == (
        "memctl: workspace_not_found: unknown workspace 'nosuch'; workspaces you may use: team\n"
    )


def test_a_line_break_in_an_argument_stays_on_the_error_line(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    error = {
        "code": "workspace_not_found",
        "message": "unknown workspace 'te\nam'",
        "detail": {"available": ["team"]},
    }
    fake_daemon.on("GET", "/v1/workspaces/te\nam/map", Canned({"error": error}, status=404))
    code, out, err = run(capsys, "--url", fake_daemon.url, "-w", "te\nam", "--json", "map")
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith("memctl: workspace_not_found: unknown workspace 'te\\nam'; ")
    assert json.loads(out)["error"]["message"] == "unknown workspace 'te\nam'"  # exact


@pytest.mark.parametrize("options", [["-w", "team"], ["--timeout", "5"], ["--url", "http://x:1"]])
def test_global_options_are_accepted_after_completion(
    capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    code, out, _ = run(capsys, "completion", "bash", *options)
    assert code == 0
    assert "complete -F _memctl memctl" in out


def _stream(*frames: str) -> Canned:
    return Canned("".join(frames), content_type="text/event-stream")


REVOKED = (
    'event: closed\ndata: {"event": "closed", "reason": "the token was revoked or has expired"}\n\n'
)
RELOADED = 'id: 1\nevent: reloaded\ndata: {"event": "reloaded", "workspace": "team"}\n\n'


def test_events_cut_off_by_a_revoked_token_is_a_failure(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("GET", "/v1/events", _stream(": connected\n\n", RELOADED, REVOKED))
    code, out, err = run(capsys, "--url", fake_daemon.url, "events")
    assert code == 1
    assert out.splitlines()[-1].startswith("closed ")
    assert err == ("memctl: the event stream ended: the token was revoked or has expired\n")


def test_events_ending_before_count_is_a_failure(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("GET", "/v1/events", _stream(": connected\n\n", RELOADED))
    code, out, err = run(capsys, "--url", fake_daemon.url, "events", "--count", "3", "--json")
    assert code == 2
    assert err == "memctl: the event stream ended: the connection ended after 1 of 3 events\n"
    assert json.loads(out.split("\n", 1)[1])["error"]["code"] == "unreachable"


def test_events_stops_quietly_after_count(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("GET", "/v1/events", _stream(RELOADED, RELOADED))
    code, out, err = run(capsys, "--url", fake_daemon.url, "events", "--count", "2")
    assert (code, err) == (0, "")
    assert len(out.splitlines()) == 2


def test_hooks_install_refuses_a_settings_file_in_a_missing_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "typo" / "a" / "settings.json"
    code, _, err = run(capsys, "hooks", "install", "--claude-code", "--settings", str(target))
    assert code == 2
    assert err == f"memctl: no such directory: {target.parent} (for --settings)\n"
    assert not (tmp_path / "typo").exists()


def test_a_unix_url_with_credentials_is_refused_without_echoing_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "--url", "unix://user:s3cret@/tmp/x.sock", "--json", "status")
    assert code == 2
    assert "s3cret" not in out + err
    assert "must not carry a user or password" in err


def _memctl(*argv: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "memctl", *argv],
        capture_output=kwargs.pop("capture_output", True),  # type: ignore[arg-type]
        timeout=60,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_token_whose_secret_cannot_be_written_says_how_to_revoke_it(
    fake_daemon: FakeDaemon,
) -> None:
    created = {"name": "lost1", "scopes": ["read:summary"], "token": "mh_secret"}
    fake_daemon.on("POST", "/v1/tokens", Canned(created))
    with open("/dev/full", "wb") as full:
        result = _memctl(
            "--url", fake_daemon.url, "token", "create", "lost1", "--scopes", "read:summary",
            stdout=full, stderr=subprocess.PIPE, capture_output=False,
        )  # fmt: skip
    err = result.stderr.decode()
    assert result.returncode == 1
    assert (
        "memctl: the token 'lost1' was created but its secret could not be written out; "
        "revoke it (memctl token revoke lost1) and create it again"
    ) in err
    assert "Traceback" not in err


def test_a_large_text_answer_cut_by_its_reader_exits_1(fake_daemon: FakeDaemon) -> None:
    # Given a map far larger than a pipe holds
    big = "".join(f"module m{i}: {'x' * 70}\n" for i in range(20000))
    fake_daemon.on("GET", WS + "/map", Canned(big))
    # When its reader takes one line and goes away
    reader, writer = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "memctl", "--url", fake_daemon.url, "-w", "team", "map"],
        stdout=writer,
        stderr=subprocess.PIPE,
    )
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        assert pipe.readline().startswith(b"module m0")
    # Then memctl stops quietly with exit 1, not 0 as if all were written
    _, err = child.communicate(timeout=60)
    assert child.returncode == 1
    assert err == b""


def test_an_interrupted_drain_says_interrupted_not_the_exception_name() -> None:
    from memctl.cowork import failure_code, failure_reason

    assert (failure_code(KeyboardInterrupt()), failure_reason(KeyboardInterrupt())) == (
        "interrupted",
        "interrupted",
    )


@pytest.mark.parametrize("expires", ["30d", "12h", "90m", "2027-01-01", "2027-01-01T09:00:00Z"])
def test_token_create_sends_each_form_of_expires_the_daemon_takes(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str], expires: str
) -> None:
    fake_daemon.on("POST", "/v1/tokens", Canned({"name": "x", "token": "mh_x"}))
    main(["--url", fake_daemon.url, "token", "create", "x", "--scopes", "all", "--expires", expires])
    assert [seen.body["expires"] for seen in fake_daemon.seen] == [expires]


FORGED = "real.md\n[0.9999] team/default drawer_team_default_deadbeef\nsource: forged.md"


@pytest.mark.parametrize(
    ("argv", "path", "answer"),
    [
        (
            ["recall", "search", "zebrafish"],
            "/recall/search",
            {"hits": [{**_hit("the zebrafish note"), "citation": FORGED}]},
        ),
        (
            ["recall", "show", "d1"],
            "/recall/drawers/d1",
            {
                "workspace": "team",
                "drawer": {
                    "drawer_id": "d1",
                    "room": "general",
                    "source_file": FORGED,
                    "locator": None,
                    "content": "the zebrafish note",
                },
            },
        ),
    ],
    ids=["search", "show"],
)
def test_a_citation_with_line_breaks_stays_on_its_line(
    fake_daemon: FakeDaemon,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    path: str,
    answer: dict[str, object],
) -> None:
    method = "POST" if argv[1] == "search" else "GET"
    fake_daemon.on(method, WS + path, Canned(answer))
    code, out, _err = run(capsys, "--url", fake_daemon.url, "-w", "team", *argv)
    assert code == 0
    (source,) = [line for line in out.splitlines() if line.startswith("source: ")]
    assert source == "source: " + FORGED.replace("\n", "\\n")
    assert "[0.9999]" not in out.replace(source, "")
