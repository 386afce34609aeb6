"""A success whose JSON is not of the shape a command reads (a list or null where an
object belongs, a key missing, a field of another type: a proxy, an older or newer
daemon, a bug) is told as the daemon's failure, as a body that is not JSON is: one line
on stderr, exit 2, and with --json the error envelope alone on stdout. Never a traceback,
nor a second JSON document after the first."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from memctl_fakes import Canned, FakeDaemon

from memctl.cli import main

pytestmark = pytest.mark.usefixtures("no_client_config")

WS = "/v1/workspaces/team"
TOLD = "memctl: internal: unexpected answer from the daemon: "
LIST = Canned([{"hits": []}])
NULL = Canned("null", content_type="application/json")
BODIES = {"list": LIST, "null": NULL, "missing key": Canned({"schema_version": "x"})}

# (argv, method, path); FILE stands for a small text file made by the test.
COMMANDS = [
    (["recall", "search", "zebra"], "POST", WS + "/recall/search"),
    (["recall", "search", "--all", "zebra"], "POST", "/v1/recall/search"),
    (["recall", "search", "--format", "aaak", "zebra"], "POST", WS + "/recall/search"),
    (["recall", "ingest", "FILE"], "POST", WS + "/recall/ingest"),
    (["recall", "wake-up"], "GET", WS + "/recall/wake-up"),
    (["recall", "compress", "some text"], "POST", "/v1/recall/compress"),
    (["recall", "status"], "GET", WS + "/recall/status"),
    (["recall", "delete", "d1"], "DELETE", WS + "/recall/drawers/d1"),
    (["recall", "purge"], "POST", WS + "/recall/purge"),
    (["recall", "taxonomy"], "GET", WS + "/recall/taxonomy"),
    (["recall", "taxonomy", "edit", "ops", "deploy"], "POST", WS + "/recall/taxonomy"),
    (["recall", "reindex"], "POST", WS + "/recall/reindex"),
    (["kg", "add", "api", "uses", "db"], "POST", WS + "/kg/triples"),
    (["kg", "query"], "GET", WS + "/kg/triples"),
    (["kg", "invalidate", "t1"], "POST", WS + "/kg/triples/t1/invalidate"),
    (["kg", "timeline", "api"], "GET", WS + "/kg/timeline"),
    (["kg", "stats"], "GET", WS + "/kg/stats"),
    (["tunnels"], "GET", "/v1/tunnels"),
    (["fact-check", "FILE"], "POST", WS + "/fact-check"),
    (["diary", "write", "LESSON", "keep notes"], "POST", WS + "/diary"),
    (["diary", "read"], "GET", WS + "/diary"),
    (["cowork", "push", "--to", "bob", "hello"], "POST", WS + "/cowork/push"),
    (["cowork", "status"], "GET", WS + "/cowork/status"),
    (["cowork", "peek"], "GET", WS + "/cowork/peek/auto"),
    (["check", "-t", "push", "-c", "git push"], "POST", WS + "/check"),
    (["lint"], "GET", WS + "/lint"),
    (["cat", "a.mem"], "GET", WS + "/files/a.mem"),
    (["review", "diff", "p-1", "--into", "a.mem"], "GET", WS + "/proposals/p-1"),
    (
        ["propose", "--from-drawer", "d1", "--type", "rule", "--id", "x"],
        "POST",
        WS + "/recall/drawers/d1/propose",
    ),
]
# memdsl's documents: any text is one in text form, and any object in JSON.
JSON_ONLY = [
    (["map"], "GET", WS + "/map"),
    (["types"], "GET", WS + "/types"),
    (["explain", "rule:x"], "GET", WS + "/declarations/rule:x"),
    (["query", "deploy"], "POST", WS + "/query"),
]


def _run(
    capsys: pytest.CaptureFixture[str], daemon: FakeDaemon, argv: list[str], tmp_path: Path
) -> tuple[int, str, str]:
    draft = tmp_path / "draft.md"
    draft.write_text("the api uses the db\n")
    words = [str(draft) if word == "FILE" else word for word in argv]
    code = main(["--url", daemon.url, "-w", "team", *words])
    out, err = capsys.readouterr()
    return code, out, err


def _told_in_one_line(err: str) -> None:
    assert err.startswith(TOLD), err
    assert err.count("\n") == 1 and "Traceback" not in err


def _told_alone(code: int, out: str, err: str, as_json: bool) -> None:
    """Exit 2 as a 5xx, one line on stderr, and on stdout nothing of the answer: with
    --json the error envelope alone (json.loads refuses a second document)."""
    assert code == 2
    if as_json:
        error = json.loads(out)["error"]
        assert error["code"] == "internal"
        assert error["message"].startswith("unexpected answer from the daemon: ")
    else:
        assert out == ""
    _told_in_one_line(err)


MODES = pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])


@MODES
@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
@pytest.mark.parametrize(("argv", "method", "path"), COMMANDS, ids=lambda v: v)
def test_an_answer_of_another_shape_is_told_alone_in_one_line(
    fake_daemon: FakeDaemon,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    method: str,
    path: str,
    body: Canned,
    as_json: bool,
) -> None:
    # Given a daemon that answers the command's request with JSON of another shape
    fake_daemon.on(method, path, body)
    # When the command runs
    code, out, err = _run(capsys, fake_daemon, [*argv, *(["--json"] if as_json else [])], tmp_path)
    # Then it says so in one line, prints nothing of the answer, and fails as a 5xx does
    assert fake_daemon.seen, "the request was made"
    _told_alone(code, out, err, as_json)


@pytest.mark.parametrize("body", [LIST, NULL], ids=["list", "null"])
@pytest.mark.parametrize(("argv", "method", "path"), JSON_ONLY, ids=lambda v: v)
def test_a_memdsl_document_that_is_no_object_is_the_error_envelope_alone(
    fake_daemon: FakeDaemon,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    method: str,
    path: str,
    body: Canned,
) -> None:
    fake_daemon.on(method, path, body)
    code, out, err = _run(capsys, fake_daemon, [*argv, "--json"], tmp_path)
    _told_alone(code, out, err, as_json=True)


def test_the_line_names_what_is_wrong(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for body, told in [
        (LIST, "expected a JSON object, got a list"),
        (NULL, "expected a JSON object, got null"),
        (Canned({"warnings": []}), "'hits' is missing"),
    ]:
        fake_daemon.on("POST", WS + "/recall/search", body)
        _, _, err = _run(capsys, fake_daemon, ["recall", "search", "x"], tmp_path)
        assert err == f"{TOLD}{told}\n"


FIELDS_OF_ANOTHER_TYPE = [
    (["recall", "search", "x"], "POST", WS + "/recall/search", {"hits": [{"fused_score": "hi"}]}),
    (["recall", "wake-up"], "GET", WS + "/recall/wake-up", {"text": None}),
    (["recall", "ingest", "FILE"], "POST", WS + "/recall/ingest", {"files": "1", "chunks": 0}),
    (
        ["recall", "ingest", "FILE"],
        "POST",
        WS + "/recall/ingest",
        {"files": 1, "chunks": 0, "failed": ["x"]},
    ),
    (["lint"], "GET", WS + "/lint", {"errors": "0", "warnings": 0, "diagnostics": []}),
    (["lint"], "GET", WS + "/lint", {"errors": 0, "warnings": 0, "diagnostics": None}),
    (["kg", "query"], "GET", WS + "/kg/triples", {"triples": ["t1"]}),
    (["tunnels"], "GET", "/v1/tunnels", {"tunnels": [{"room": "ops", "wings": 3}]}),
    (["check", "-t", "t", "-c", "c"], "POST", WS + "/check", {"verdict": "maybe"}),
    (["cat", "a.mem"], "GET", WS + "/files/a.mem", {"content": 7}),
]


@MODES
@pytest.mark.parametrize(("argv", "method", "path", "answer"), FIELDS_OF_ANOTHER_TYPE)
def test_a_field_of_another_type_is_told_alike(
    fake_daemon: FakeDaemon,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    method: str,
    path: str,
    answer: dict[str, object],
    as_json: bool,
) -> None:
    fake_daemon.on(method, path, Canned(answer))
    code, out, err = _run(capsys, fake_daemon, [*argv, *(["--json"] if as_json else [])], tmp_path)
    _told_alone(code, out, err, as_json)


def test_a_check_answer_without_a_verdict_in_text_is_told_alone(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fake_daemon.on("POST", WS + "/check", Canned("<html>a proxy's page</html>"))
    code, out, err = _run(capsys, fake_daemon, ["check", "-t", "t", "-c", "c"], tmp_path)
    assert (code, out) == (2, "")
    assert err == f"{TOLD}no verdict in a check's answer\n"


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_a_reindex_step_of_another_shape_stops_the_reindex(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str], tmp_path: Path, body: Canned
) -> None:
    fake_daemon.on("POST", WS + "/recall/reindex", body)
    code, _, err = _run(capsys, fake_daemon, ["recall", "reindex"], tmp_path)
    assert code == 2 and len(fake_daemon.seen) == 1  # not asked again, and again
    _told_in_one_line(err)


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_cowork_drain_tells_an_answer_of_another_shape_and_still_exits_0(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str], tmp_path: Path, body: Canned
) -> None:
    answer = body if body is not BODIES["missing key"] else Canned({"messages": ["hi"]})
    fake_daemon.on("POST", WS + "/cowork/drain", answer)
    code, out, err = _run(capsys, fake_daemon, ["cowork", "drain", "--format", "json"], tmp_path)
    assert code == 0
    error = json.loads(out)["error"]
    assert error["code"] == "internal"
    assert error["message"].startswith("internal: unexpected answer from the daemon: ")
    assert "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_cowork_drain_of_every_workspace_goes_on_past_one_answered_oddly(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str], body: Canned
) -> None:
    workspaces = {"workspaces": [{"name": "odd"}, {"name": "team"}]}
    fake_daemon.on("GET", "/v1/workspaces", Canned(workspaces))
    answer = body if body is not BODIES["missing key"] else Canned({"messages": ["hi"]})
    fake_daemon.on("POST", "/v1/workspaces/odd/cowork/drain", answer)
    message = {"from": "bob", "pushed_at": "now", "content": "ship it"}
    fake_daemon.on("POST", WS + "/cowork/drain", Canned({"messages": [message], "remaining": 0}))
    assert main(["--url", fake_daemon.url, "cowork", "drain", "--format", "json"]) == 0
    drained = json.loads(capsys.readouterr().out)
    assert [m["content"] for m in drained["messages"]] == ["ship it"]
    assert [(e["workspace"], e["code"]) for e in drained["errors"]] == [("odd", "internal")]


SESSION_END_BODIES = {
    "list": LIST,
    "null": NULL,
    "chunks-not-a-count": Canned({"chunks": "x", "files": 1}),
    "failed-not-objects": Canned({"chunks": 0, "files": 1, "failed": ["x"]}),
}


@pytest.mark.parametrize("body", SESSION_END_BODIES.values(), ids=SESSION_END_BODIES.keys())
def test_the_session_end_hook_tells_an_answer_of_another_shape_and_still_exits_0(
    fake_daemon: FakeDaemon,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    body: Canned,
) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_text('{"type":"user","message":{"role":"user","content":"hello"}}\n')
    event = json.dumps({"transcript_path": str(transcript)}).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(event)))
    fake_daemon.on("POST", WS + "/recall/ingest", body)
    argv = ["--url", fake_daemon.url, "-w", "team", "hooks", "session-end", "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["code"] == "internal"
    assert "unexpected answer from the daemon: " in err
    assert "Traceback" not in err
