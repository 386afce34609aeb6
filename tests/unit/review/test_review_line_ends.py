"""An approval into a file whose lines all end in CRLF (a `core.autocrlf` checkout) keeps it
CRLF throughout: the inserted `status: superseded` and the appended block follow the file.
Any other file gets LF, as memdsl writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from review_helpers import BASE_MEM, fact_source, load

from memhubd.lang.writer import line_end, set_status
from memhubd.review import ReviewStore
from memhubd.review.proposal import has_marker, marker_stamp

CORRECTION = fact_source(
    "db.engine_v2", claim="It is MySQL.", extra='  supersedes: "fact:db.engine"\n'
)


def crlf(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode("utf-8")


def assert_all_crlf(data: bytes) -> None:
    assert data.count(b"\n") == data.count(b"\r\n") == data.count(b"\r") > 0


@pytest.mark.parametrize(
    ("text", "end"),
    [
        ("a\r\nb\r\n", "\r\n"),
        ("a\r\nb", "\r\n"),
        ("a\nb\n", "\n"),
        ("a\r\nb\n", "\n"),
        ("a\r\nb\rc\r\n", "\n"),
        ("", "\n"),
        ("no line end", "\n"),
    ],
    ids=["crlf", "crlf-unended", "lf", "mixed", "lone-cr", "empty", "one-line"],
)
def test_the_line_end_is_crlf_only_when_every_line_ends_so(text: str, end: str) -> None:
    assert line_end(text) == end


def test_an_inserted_status_ends_its_line_as_the_file_does() -> None:
    text = 'fact a {\r\n  claim: "x"\r\n}\r\n'

    assert set_status(text, "fact", "a", "superseded") == (
        'fact a {\r\n  status: superseded\r\n  claim: "x"\r\n}\r\n'
    )
    assert set_status(text.replace("\r\n", "\n"), "fact", "a", "superseded") == (
        'fact a {\n  status: superseded\n  claim: "x"\n}\n'
    )


def test_an_approval_into_a_crlf_file_keeps_every_line_crlf(tmp_path: Path) -> None:
    # Given a workspace checked out with CRLF line ends
    root = tmp_path / "ws"
    root.mkdir()
    (root / "base.mem").write_bytes(crlf(BASE_MEM))
    store = ReviewStore(str(root))
    proposed = store.propose(load(root), CORRECTION, proposer="agent", supersedes="fact:db.engine")
    assert proposed.ok, proposed.errors

    # When a correction of one of its declarations is approved into it
    decision = store.approve(proposed.proposal_id, load(root), "base.mem", reviewer="alice")

    # Then the old one is marked and the new one appended, every line ending in CRLF
    assert decision.ok and decision.marked_superseded == ("fact:db.engine",)
    data = (root / "base.mem").read_bytes()
    assert_all_crlf(data)
    assert data.startswith(crlf(BASE_MEM.split("  subject: db\n  claim")[0]))
    assert b"fact db.engine {\r\n  status: superseded\r\n  subject: db\r\n" in data
    served = {d.id: d.status for d in load(root).declarations}
    assert served["fact:db.engine"] == "superseded" and "fact:db.engine_v2" in served
    # The marker is found, and its stamp read, as in an LF file
    text = data.decode("utf-8")
    assert has_marker(text, proposed.proposal_id)
    assert marker_stamp(text, proposed.proposal_id).endswith("+00:00")


def test_a_crlf_file_marked_elsewhere_stays_crlf(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "base.mem").write_bytes(crlf(BASE_MEM))
    store = ReviewStore(str(root))
    pid = store.propose(load(root), CORRECTION, proposer="agent").proposal_id

    decision = store.approve(pid, load(root), "new.mem", reviewer="alice")

    assert decision.ok and decision.marked_superseded == ("fact:db.engine",)
    assert_all_crlf((root / "base.mem").read_bytes())
    assert b"\r" not in (root / "new.mem").read_bytes()  # a new file is LF, as memdsl's


def test_a_file_of_mixed_line_ends_gets_lf_as_memdsl_writes(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    mixed = crlf(BASE_MEM).replace(b"entity db {\r\n", b"entity db {\n")
    (root / "base.mem").write_bytes(mixed)
    store = ReviewStore(str(root))
    pid = store.propose(load(root), fact_source("db.size"), proposer="agent").proposal_id

    assert store.approve(pid, load(root), "base.mem", reviewer="alice").ok

    data = (root / "base.mem").read_bytes()
    assert data.startswith(mixed) and b"\r" not in data[len(mixed) :]


def test_the_diff_of_an_approval_into_a_crlf_file_shows_its_block(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "base.mem").write_bytes(crlf(BASE_MEM))
    store = ReviewStore(str(root))
    pid = store.propose(load(root), fact_source("db.size"), proposer="agent").proposal_id
    pending = store.diff(pid, "base.mem")
    assert store.approve(pid, load(root), "base.mem", reviewer="alice").ok

    approved = store.diff(pid)

    # Then the diff holds the whole block, each line as the file ends it (CRLF)
    added = [line for line in approved.diff.split("\n") if line.startswith("+")][1:]
    assert added[0] == "+\r" and added[1].startswith(f"+# approved from proposal {pid} at ")
    assert len(added) == 2 + fact_source("db.size").count("\n")
    assert all(line.endswith("\r") for line in added)
    # and the diff shown before approving added the same source lines
    before = [line for line in pending.diff.split("\n") if line.startswith("+")][1:]
    assert before[2:] == added[2:]
