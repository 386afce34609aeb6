"""`memhubd bench longmemeval` as a command: its errors, options, header and progress."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from recall_fakes import HashingEmbedder
from test_longmemeval import DATA, question

from memhubd.cli import main
from memhubd.recall import longmemeval
from memhubd.recall.embed import EmbedderError

BENCH = ["bench", "longmemeval"]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(DATA))
    return path


def one_error(capsys: pytest.CaptureFixture[str], as_json: bool) -> tuple[str, dict[str, Any]]:
    """The one stderr line, and the JSON error envelope when `as_json` (else no stdout)."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    if not as_json:
        assert captured.out == ""
        return lines[0], {}
    return lines[0], json.loads(captured.out)["error"]


def never_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_args: Any, **_kwargs: Any) -> dict[str, Any]:
        raise AssertionError("the benchmark ran")

    monkeypatch.setattr(longmemeval, "run", fail)


@pytest.mark.parametrize("as_json", [False, True])
def test_an_out_directory_is_refused_before_any_question_runs(
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    as_json: bool,
) -> None:
    never_run(monkeypatch)
    argv = [*BENCH, str(data), "--no-vectors", "--out", str(tmp_path)]
    assert main(argv + ["--json"] * as_json) == 2
    line, error = one_error(capsys, as_json)
    assert line == f"cannot write {tmp_path}: Is a directory"
    if as_json:
        assert error == {
            "code": "cannot_write",
            "message": "Is a directory",
            "detail": {"file": str(tmp_path)},
        }


def test_an_out_file_in_a_missing_directory_is_refused(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    never_run(monkeypatch)
    out = tmp_path / "missing" / "out.jsonl"
    assert main([*BENCH, str(data), "--no-vectors", "--out", str(out), "--json"]) == 2
    line, error = one_error(capsys, True)
    assert line == f"cannot write {out}: No such file or directory"
    assert error["code"] == "cannot_write"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_lines_that_cannot_be_written_end_in_an_error_not_a_traceback(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BENCH, str(data), "--no-vectors", "--out", "/dev/full", "--json"]) == 2
    line, error = one_error(capsys, True)
    assert line == "cannot write /dev/full: No space left on device"
    assert error["code"] == "cannot_write"


def test_a_refused_input_leaves_the_out_file_untouched(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("kept\n")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main([*BENCH, str(bad), "--no-vectors", "--out", str(out)]) == 2
    assert out.read_text() == "kept\n"  # the input is checked before --out is opened
    capsys.readouterr()


@pytest.mark.parametrize(
    ("content", "line_end", "code"),
    [
        (None, ": No such file or directory", "cannot_read"),
        ("directory", ": Is a directory", "cannot_read"),
        (b"\xff\xfe[]", ": not UTF-8 (byte 0xff at offset 0)", "invalid_data"),
        (b'{"a": 1', ": not JSON (Expecting ',' delimiter at line 1 column 8)", "invalid_data"),
        (b'{"a": 1}', ": expected a JSON array of questions, not an object", "invalid_data"),
        (b"[]", ": no questions in the file", "invalid_data"),
    ],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_an_unusable_input_file_is_one_line_naming_it_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: bytes | str | None,
    line_end: str,
    code: str,
    as_json: bool,
) -> None:
    path = tmp_path / "lme.json"
    if content == "directory":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    assert main([*BENCH, str(path), "--no-vectors"] + ["--json"] * as_json) == 2
    line, error = one_error(capsys, as_json)
    assert str(path) in line and line.endswith(line_end)
    if as_json:
        assert error["code"] == code and error["detail"] == {"file": str(path)}


def malformed_entries() -> list[tuple[Any, str]]:
    def changed(**fields: Any) -> dict[str, Any]:
        entry = question(9, "rowing")
        for key, value in fields.items():
            if value is None:
                del entry[key]
            else:
                entry[key] = value
        return entry

    return [
        ([1, 2], "not a JSON object but an array"),
        (7, "not a JSON object but a number"),
        (changed(question=None), "`question` is missing or not a string"),
        (changed(question=["what"]), "`question` is missing or not a string"),
        (changed(haystack_sessions="text"), "`haystack_sessions` is missing or not a list"),
        (changed(haystack_sessions=[[], "turn"]), "`haystack_sessions[1]` is not a list of turns"),
        (
            changed(haystack_sessions=[[{"role": "user"}], [], []]),
            "`haystack_sessions[0][0]` is not an object with string role and content",
        ),
        (changed(haystack_session_ids=None), "`haystack_session_ids` is missing or not a list"),
        (changed(haystack_session_ids=["a", "b"]), "2 `haystack_session_ids` for 3 sessions"),
        (changed(haystack_dates=["2023/05/01"]), "1 `haystack_dates` for 3 sessions"),
        (changed(answer_session_ids="s9b"), "`answer_session_ids` is missing or not a list"),
    ]


@pytest.mark.parametrize(("entry", "problem"), malformed_entries())
def test_a_malformed_question_refuses_the_file_naming_its_index(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    entry: Any,
    problem: str,
) -> None:
    never_run(monkeypatch)
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([*DATA, entry]))
    assert main([*BENCH, str(path), "--no-vectors", "--json"]) == 2
    line, error = one_error(capsys, True)
    assert problem in line
    assert line == f"{path}: the question at index 3: {error['message'].split(': ', 1)[1]}"
    assert error["code"] == "invalid_data"
    assert error["detail"] == {"file": str(path), "index": 3}


def test_only_the_selected_questions_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([*DATA, 1, *DATA]))
    assert main([*BENCH, str(path), "--no-vectors", "--limit", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == 3
    assert main([*BENCH, str(path), "--no-vectors", "--skip", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == 3
    assert main([*BENCH, str(path), "--no-vectors", "--skip", "2", "--limit", "3"]) == 2
    line, _ = one_error(capsys, False)
    assert line == f"{path}: the question at index 3: not a JSON object but a number"


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--limit", "-1", "argument --limit: must be at least 0, not -1"),
        ("--skip", "-2", "argument --skip: must be at least 0, not -2"),
        ("--top-k", "0", "argument --top-k: must be at least 1, not 0"),
        ("--top-k", "-5", "argument --top-k: must be at least 1, not -5"),
        ("--limit", "many", "argument --limit: expected a whole number, got 'many'"),
    ],
)
def test_negative_counts_and_a_top_k_of_0_are_usage_errors(
    data: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    option: str,
    value: str,
    message: str,
) -> None:
    never_run(monkeypatch)
    with pytest.raises(SystemExit) as exit_:
        main([*BENCH, str(data), "--no-vectors", f"{option}={value}", "--json"])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.rstrip().endswith(f"error: {message}")
    assert json.loads(captured.out) == {
        "error": {"code": "usage", "message": message, "detail": {}}
    }


def test_limit_0_runs_every_question_and_skip_counts_from_the_start(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BENCH, str(data), "--no-vectors", "--limit", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == 3
    assert main([*BENCH, str(data), "--no-vectors", "--skip", "1", "--limit", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == 1
    assert main([*BENCH, str(data), "--no-vectors", "--skip", "3"]) == 2
    line, _ = one_error(capsys, False)
    assert line == f"{data}: no question left after --skip 3 (the file has 3)"


def test_the_header_says_what_was_searched(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main([*BENCH, str(data), "--no-vectors"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header == "LongMemEval retrieval (memhub recall: BM25 only, no vectors)"
    assert main([*BENCH, str(data), "--no-vectors", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedder"] is None

    import memhubd.recall.embed as embed

    monkeypatch.setattr(embed, "load_embedder", lambda: HashingEmbedder("hashing-test"))
    assert main([*BENCH, str(data)]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header == "LongMemEval retrieval (memhub recall: BM25 + vectors (hashing-test), RRF)"
    assert main([*BENCH, str(data), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedder"] == "hashing-test"


class BrokenEmbedder(HashingEmbedder):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbedderError("the model file is missing")


def test_an_embedder_that_fails_is_one_line_and_exit_2(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import memhubd.recall.embed as embed

    monkeypatch.setattr(embed, "load_embedder", lambda: BrokenEmbedder())
    assert main([*BENCH, str(data), "--json"]) == 2
    line, error = one_error(capsys, True)
    assert line == "the embedder failed: the model file is missing"
    assert error == {"code": "embedder", "message": "the model file is missing", "detail": {}}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


def test_progress_is_drawn_on_stderr_only_when_it_is_a_terminal(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([*BENCH, str(data), "--no-vectors"]) == 0
    drawn = terminal.getvalue()
    assert drawn.startswith("\r[") and drawn.endswith("\n") and drawn.count("\n") == 1
    assert "] 0/3 questions, " in drawn and "] 3/3 questions, " in drawn
    assert "[" + "#" * 30 + "] 3/3" in drawn
    assert "\r" not in capsys.readouterr().out

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([*BENCH, str(data), "--no-vectors", "--json"]) == 0
    assert terminal.getvalue() == ""
    json.loads(capsys.readouterr().out)

    pipe = Pipe()
    monkeypatch.setattr(sys, "stderr", pipe)
    assert main([*BENCH, str(data), "--no-vectors"]) == 0
    assert pipe.getvalue() == ""
