"""What memctl refuses on its own side, before any request: a number outside the range
the daemon takes (a usage error, exit 2), an empty or blank id or name argument (a usage
error naming the argument, not the daemon's "no such route"), and an empty text to
search or check (the `local` error, exit 2, as `recall compress ""`). The daemon here is
down: an answer of `unreachable` would mean the request was attempted."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from memctl.cli import main
from memhub_protocol.errors import ProtocolError
from memhub_protocol.models import MAX_BUDGET, MIN_BUDGET_BYTES, QueryRequest
from memhub_protocol.recall import MAX_LIMIT
from memhub_protocol.routes import (
    DIARY_MAX_LIMIT,
    KG_MAX_LIMIT,
    KG_MAX_OFFSET,
    PEEK_MAX_LIMIT,
    WAKE_UP_MAX_LIMIT,
    WAKE_UP_MIN_BUDGET,
)

DOWN = "http://127.0.0.1:9"
AT = ["--url", DOWN, "-w", "team", "--json"]


@pytest.fixture(autouse=True)
def no_user_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMHUB_URL", "MEMHUB_TOKEN", "MEMHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[str, str, str]:
    """Run memctl; (the envelope's code, its message, stderr), after checking exit 2."""
    try:
        code = main([*AT, *argv])
    except SystemExit as stop:  # a usage error, told by the parser
        code = stop.code
    out, err = capsys.readouterr()
    assert code == 2, err
    envelope = json.loads(out)["error"]
    return envelope["code"], envelope["message"], err


# -- numbers out of range ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["query", "x", "--max-must", "-1"], "argument --max-must: must be at least 0, not -1"),
        (
            ["query", "x", "--max-must", str(MAX_BUDGET + 1)],
            f"argument --max-must: must be at most {MAX_BUDGET}, not {MAX_BUDGET + 1}",
        ),
        (
            ["query", "x", "--max-bytes", str(MIN_BUDGET_BYTES - 1)],
            f"argument --max-bytes: must be at least {MIN_BUDGET_BYTES}, not 255",
        ),
        (
            ["query", "x", "--limit", "99999999999999999999999"],
            "argument --limit: must be at most 1000, not 99999999999999999999999",
        ),
        (["query", "x", "--limit", "1001"], "argument --limit: must be at most 1000, not 1001"),
        (
            ["recall", "ingest", ".", "--max-file-bytes", "-1"],
            "argument --max-file-bytes: must be at least 1, not -1",
        ),
        (
            ["recall", "ingest", ".", "--max-file-bytes", "0"],
            "argument --max-file-bytes: must be at least 1, not 0",
        ),
        (
            ["recall", "ingest", ".", "--request-bytes", "0"],
            "argument --request-bytes: must be at least 1, not 0",
        ),
        (
            ["recall", "ingest", ".", "--request-bytes", "-5"],
            "argument --request-bytes: must be at least 1, not -5",
        ),
        (["recall", "search", "x", "--limit", "0"], "argument --limit: must be at least 1, not 0"),
        (
            ["recall", "search", "x", "--limit", str(MAX_LIMIT + 1)],
            f"argument --limit: must be at most {MAX_LIMIT}, not {MAX_LIMIT + 1}",
        ),
        (["recall", "wake-up", "--limit", "0"], "argument --limit: must be at least 1, not 0"),
        (
            ["recall", "wake-up", "--limit", str(WAKE_UP_MAX_LIMIT + 1)],
            f"argument --limit: must be at most {WAKE_UP_MAX_LIMIT}, not {WAKE_UP_MAX_LIMIT + 1}",
        ),
        (
            ["recall", "wake-up", "--budget", "10"],
            f"argument --budget: must be at least {WAKE_UP_MIN_BUDGET}, not 10",
        ),
        (["diary", "read", "--limit", "0"], "argument --limit: must be at least 1, not 0"),
        (
            ["diary", "read", "--limit", str(DIARY_MAX_LIMIT + 1)],
            f"argument --limit: must be at most {DIARY_MAX_LIMIT}, not {DIARY_MAX_LIMIT + 1}",
        ),
        (["cowork", "peek", "--limit", "0"], "argument --limit: must be at least 1, not 0"),
        (
            ["cowork", "peek", "--limit", str(PEEK_MAX_LIMIT + 1)],
            f"argument --limit: must be at most {PEEK_MAX_LIMIT}, not {PEEK_MAX_LIMIT + 1}",
        ),
        (["list", "--limit", "0"], "argument --limit: must be at least 1, not 0"),
        (["list", "--limit", "501"], "argument --limit: must be at most 500, not 501"),
        (["kg", "query", "--limit", "0"], "argument --limit: must be at least 1, not 0"),
        (
            ["kg", "query", "--limit", str(KG_MAX_LIMIT + 1)],
            f"argument --limit: must be at most {KG_MAX_LIMIT}, not {KG_MAX_LIMIT + 1}",
        ),
        (["kg", "query", "--offset", "-1"], "argument --offset: must be at least 0, not -1"),
        (
            ["kg", "query", "--offset", str(KG_MAX_OFFSET + 1)],
            f"argument --offset: must be at most {KG_MAX_OFFSET}, not {KG_MAX_OFFSET + 1}",
        ),
    ],
)
def test_a_number_out_of_range_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, said, err = refused(capsys, argv)
    assert (code, said) == ("usage", message)
    assert message in err


def test_the_query_bounds_are_the_daemons() -> None:
    from memctl.cli import QUERY_LIMIT_MAX

    QueryRequest.from_json(
        {"query": "x", "limit": QUERY_LIMIT_MAX, "max_bytes": MIN_BUDGET_BYTES, "max_must": 0}
    )
    for bad in (
        {"limit": QUERY_LIMIT_MAX + 1},
        {"max_bytes": MIN_BUDGET_BYTES - 1},
        {"max_must": -1},
        {"max_must": MAX_BUDGET + 1},
    ):
        with pytest.raises(ProtocolError):
            QueryRequest.from_json({"query": "x", **bad})


def test_the_recall_diary_cowork_and_graph_bounds_are_the_daemons() -> None:
    from memhubd.service import cowork, diary, graph, recall

    assert (WAKE_UP_MAX_LIMIT, DIARY_MAX_LIMIT) == (recall.WAKE_UP_LIMIT, diary.MAX_READ_LIMIT)
    assert (PEEK_MAX_LIMIT, KG_MAX_LIMIT) == (cowork.MAX_PEEK_LIMIT, graph.MAX_LIMIT)
    assert KG_MAX_OFFSET == graph.MAX_OFFSET


# -- empty ids and names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "argument"),
    [
        (["explain", "{}"], "id"),
        (["cat", "{}"], "FILE_ID"),
        (["review", "show", "{}"], "id"),
        (["review", "diff", "{}", "--into", "a.mem"], "id"),
        (["review", "approve", "{}", "--into", "a.mem"], "id"),
        (["review", "reject", "{}", "--reason", "no"], "id"),
        (["recall", "delete", "{}"], "drawer_id"),
        (["kg", "invalidate", "{}"], "triple_id"),
        (["kg", "timeline", "{}"], "entity"),
        (["kg", "add", "{}", "uses", "b"], "subject"),
        (["kg", "add", "a", "{}", "b"], "predicate"),
        (["kg", "add", "a", "uses", "{}"], "object"),
        (["cowork", "peek", "{}"], "partner"),
        (["cowork", "push", "--to", "{}", "hello"], "--to"),
        (["workspaces", "add", "{}", "/tmp"], "name"),
        (["workspaces", "remove", "{}"], "name"),
        (["token", "create", "{}", "--scopes", "all"], "name"),
        (["token", "revoke", "{}"], "name"),
        (["propose", "--from-drawer", "{}", "--type", "fact", "--id", "f"], "--from-drawer"),
        (["recall", "ingest", "-", "--source", "{}"], "--source"),
    ],
)
@pytest.mark.parametrize("value", ["", "  "], ids=["empty", "blank"])
def test_an_empty_id_is_a_usage_error_naming_the_argument(
    capsys: pytest.CaptureFixture[str], argv: list[str], argument: str, value: str
) -> None:
    code, said, err = refused(capsys, [value if word == "{}" else word for word in argv])
    assert code == "usage"
    kind = "empty" if not value else "blank"
    assert said == f"argument {argument}: must not be {kind}"
    assert "route" not in err


# -- empty texts ---------------------------------------------------------------------------


@pytest.mark.parametrize("words", [[""], ["  ", ""]], ids=["empty", "blank"])
def test_an_empty_search_text_is_refused_locally(
    capsys: pytest.CaptureFixture[str], words: list[str]
) -> None:
    assert refused(capsys, ["recall", "search", *words])[:2] == (
        "local",
        "the search text is empty",
    )


@pytest.mark.parametrize("content", ["", " \n\t\n"], ids=["empty", "blank"])
def test_an_empty_draft_to_fact_check_is_refused_locally(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str
) -> None:
    draft = tmp_path / "draft.md"
    draft.write_text(content)
    assert refused(capsys, ["fact-check", str(draft)])[:2] == (
        "local",
        "the draft is empty: nothing to check",
    )


def test_an_empty_stdin_to_fact_check_is_refused_locally(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    assert refused(capsys, ["fact-check", "-"])[:2] == (
        "local",
        "the draft is empty: nothing to check",
    )


# -- empty lists ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", ",", " , "], ids=["empty", "comma", "blank"])
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["token", "create", "ci", "--scopes", "read:search", "--workspaces"],
            "argument --workspaces: name at least one workspace, or * for all",
        ),
        (["recall", "ingest", "-", "--readers"], "argument --readers: name at least one role"),
    ],
    ids=["token-workspaces", "ingest-readers"],
)
def test_an_empty_list_is_a_usage_error_not_every_workspace_or_reader(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str, value: str
) -> None:
    assert refused(capsys, [*argv, value])[:2] == ("usage", message)


# -- blank flag values ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "argument"),
    [
        (["-w", "{}", "recall", "status"], "-w/--workspace"),
        (["recall", "status", "--workspace", "{}"], "-w/--workspace"),
        (["--token", "{}", "status"], "--token"),
        (["--url", "{}", "status"], "--url"),
        (["propose", "--idempotency-key", "{}", "-"], "--idempotency-key"),
    ],
)
@pytest.mark.parametrize("value", ["", "  "], ids=["empty", "blank"])
def test_a_blank_flag_value_is_a_usage_error_not_the_next_setting(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    argument: str,
    value: str,
) -> None:
    # Given settings a blank flag would otherwise fall back to
    monkeypatch.setenv("MEMHUB_WORKSPACE", "writing")
    monkeypatch.setenv("MEMHUB_TOKEN", "mh_env")
    monkeypatch.setenv("MEMHUB_URL", DOWN)
    code, said = refused_as_given(capsys, [value if word == "{}" else word for word in argv])
    kind = "empty" if not value else "blank"
    assert (code, said) == ("usage", f"argument {argument}: must not be {kind}")


def refused_as_given(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[str, str]:
    """As `refused`, with only `--json` added to `argv`."""
    try:
        code = main(["--json", *argv])
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    assert code == 2, err
    envelope = json.loads(out)["error"]
    return envelope["code"], envelope["message"]


# -- inputs too large to read whole --------------------------------------------------------


@pytest.fixture
def too_large(tmp_path: Path) -> Path:
    """A file one byte over what memctl reads (sparse: it costs no disk)."""
    from memctl.commands import MAX_INPUT_BYTES

    path = tmp_path / "huge.mem"
    with open(path, "wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "-t", "deploy", "--candidate-file", "{}"],
        ["propose", "{}"],
        ["fact-check", "{}"],
    ],
    ids=["check", "propose", "fact-check"],
)
def test_a_file_over_the_input_bound_is_refused_before_it_is_read_whole(
    capsys: pytest.CaptureFixture[str], too_large: Path, argv: list[str]
) -> None:
    code, said, _ = refused(capsys, [str(too_large) if word == "{}" else word for word in argv])
    assert (code, said) == ("local", f"{too_large} is larger than 16 MiB: refused, not read whole")


@pytest.mark.parametrize(
    "argv", [["propose", "-"], ["fact-check", "-"], ["diary", "write", "LESSON", "-"]]
)
def test_a_stdin_over_the_input_bound_is_refused_before_it_is_read_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    from memctl.commands import MAX_INPUT_BYTES

    endless = io.BytesIO(b"y\n" * (MAX_INPUT_BYTES // 2 + 1))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(endless))
    assert refused(capsys, argv)[:2] == (
        "local",
        "standard input is larger than 16 MiB: refused, not read whole",
    )
    assert endless.tell() == MAX_INPUT_BYTES + 1  # and no further


def test_an_ingested_stdin_over_max_file_bytes_fails_as_its_source(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"y\n" * 100)))
    code = main([*AT, "recall", "ingest", "-", "--max-file-bytes", "10"])
    out, _ = capsys.readouterr()
    assert code == 1  # a failed source, as a stdin that cannot be read; nothing was sent
    assert json.loads(out)["failed"] == [
        {
            "source": "stdin",
            "reason": "unreadable: standard input is larger than 10 bytes: refused, not read whole",
        }
    ]


# -- options of another form of a command --------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--type", "fact", "--id", "f"], "--type, --id"),
        (["--field", "claim=x"], "--field"),
        (["--quote", "said"], "--quote"),
    ],
)
def test_propose_options_of_a_drawer_without_from_drawer_are_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], named: str
) -> None:
    # given a stdin that a proposal read from it would find
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"fact a.b {\n}\n")))
    assert refused(capsys, ["propose", *argv])[:2] == (
        "usage",
        f"{named}: only with --from-drawer ID (a proposal from a recall drawer)",
    )
