"""A `.mem` file that is not UTF-8 is a load error naming the file, as an unreadable
one is: one line on stderr and exit 2 from the offline commands (memdsl's own CLI
ends in a traceback there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memhubd import cli
from memhubd.lang import parse_file


@pytest.fixture
def latin1_workspace(tmp_path: Path) -> Path:
    (tmp_path / "good.mem").write_text('fact a.good {\n  claim: "fine"\n}\n', encoding="utf-8")
    (tmp_path / "old.mem").write_bytes(b'fact a.old {\n  claim: "caf\xe9"\n}\n')
    return tmp_path


def test_the_error_names_the_file(latin1_workspace: Path) -> None:
    path = str(latin1_workspace / "old.mem")
    with pytest.raises(UnicodeDecodeError, match=r"invalid continuation byte \(in .*old\.mem\)"):
        parse_file(path)


@pytest.mark.parametrize(
    "argv",
    [["lint"], ["query", "-q", "cafe"], ["check", "-t", "x", "-c", "y"], ["map"]],
)
def test_offline_commands_report_it_as_a_load_error(
    latin1_workspace: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code = cli.main([argv[0], str(latin1_workspace), *argv[1:]])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("cannot read input: 'utf-8' codec can't decode byte 0xe9")
    assert "old.mem" in err and len(err.splitlines()) == 1


def test_with_memhubs_json_the_error_envelope_says_cannot_read(
    latin1_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["lint", str(latin1_workspace), "--json"])  # memdsl's lint has no --json
    out, _err = capsys.readouterr()
    assert code == 2
    assert json.loads(out)["error"]["code"] == "cannot_read"


@pytest.mark.parametrize(
    "argv",
    [["map"], ["types"], ["query", "-q", "cafe"], ["check", "-t", "x", "-c", "y"]],
)
def test_with_memdsls_json_a_load_error_prints_nothing_on_stdout(
    latin1_workspace: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    # memdsl's map, types, query and check have --json and print nothing on stdout then
    code = cli.main([argv[0], str(latin1_workspace), *argv[1:], "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.startswith("cannot read input:")


def test_explain_of_an_unknown_id_prints_memdsls_line_and_exits_0(
    latin1_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (latin1_workspace / "old.mem").unlink()
    code = cli.main(["explain", str(latin1_workspace), "nope"])
    out, err = capsys.readouterr()
    assert (code, out, err) == (0, "declaration 'nope' not found\n", "")
    # memdsl's explain has no --json: memhub's answers the unknown id as an error
    code = cli.main(["explain", str(latin1_workspace), "nope", "--json"])
    out, _err = capsys.readouterr()
    assert code == 1 and json.loads(out)["error"]["code"] == "not_found"
