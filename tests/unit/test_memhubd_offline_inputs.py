"""The offline commands refuse, in one line with exit 2, an input they would read
without end: a load path that is neither a file nor a directory (/dev/zero, a FIFO),
and a candidate file over 16 MiB. memdsl's CLI reads them whole, until memory runs out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memhubd import cli
from memhubd.offline import MAX_CANDIDATE_BYTES


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.mem").write_text('fact a.one {\n  claim: "fine"\n}\n')
    return tmp_path / "ws"


# A device is refused like /dev/zero, whatever it holds: /dev/null ends at once, so a
# load that reads it anyway fails this test instead of taking all memory.
DEVICE = "/dev/null"


@pytest.mark.parametrize("argv", [["lint"], ["map"], ["check", "-t", "x", "-c", "y"]])
def test_a_load_path_that_is_no_file_nor_directory_is_refused_unread(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code = cli.main([argv[0], DEVICE, *argv[1:]])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == f"cannot read input: {DEVICE} is not a regular file or directory\n"


def test_with_json_the_refusal_is_the_cannot_read_envelope(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["lint", DEVICE, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "cannot_read"


def test_a_candidate_file_over_the_bound_is_refused_before_it_is_read_whole(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = tmp_path / "candidate.txt"
    with open(huge, "wb") as handle:
        handle.truncate(MAX_CANDIDATE_BYTES + 1)  # sparse: no disk
    code = cli.main(["check", str(workspace), "-t", "x", "--candidate-file", str(huge)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == f"cannot read candidate: {huge} is larger than 16 MiB\n"


def test_a_candidate_file_within_the_bound_is_checked_as_before(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    candidate = tmp_path / "candidate.txt"
    candidate.write_bytes(b"deploy from a laptop\r\n")
    code = cli.main(["check", str(workspace), "-t", "deploy", "--candidate-file", str(candidate)])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize("odd", ["fifo", "device link"])
def test_a_source_inside_a_directory_that_is_no_regular_file_is_refused_unread(
    workspace: Path, capsys: pytest.CaptureFixture[str], odd: str
) -> None:
    """A FIFO named `*.mem` (opening it waited for a writer) or a link to a device: the
    load fails in one line instead of waiting, or reading, without end."""
    import os

    if odd == "fifo":
        os.mkfifo(workspace / "pipe.mem")
    else:
        (workspace / "null.mem").symlink_to(DEVICE)
    code = cli.main(["lint", str(workspace)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith("cannot read input:") and "not a regular file" in err
