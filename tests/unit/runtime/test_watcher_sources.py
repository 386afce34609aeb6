"""Which paths the watcher takes for sources: the same as a start's walk (hidden
directories included), and a source link's when a file it leads to changes."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from memhubd.runtime import watcher
from memhubd.runtime.sources import walk_sources
from memhubd.runtime.watcher import workspace_signature
from tests.unit.runtime.test_workspace_watcher import (
    next_call,
    no_call_within,
    until_watching,
    watching,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def quick_root_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watcher, "ROOT_CHECK_S", 0.1)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "a.mem").write_text('fact a { claim: "one" }\n')
    (root / "sub" / "b.mem").write_text('fact b { claim: "two" }\n')
    return root


def test_the_signature_lists_what_a_start_walks(workspace: Path) -> None:
    for hidden in (".git/objects/ab", ".hg", ".svn", "__pycache__", ".memdsl"):
        (workspace / hidden).mkdir(parents=True)
        (workspace / hidden / "x.mem").write_text('fact x { claim: "hidden" }\n')
        (workspace / hidden / "noise").write_text("not a source")
    (workspace / "linked").symlink_to(workspace / "sub")  # never descended
    (workspace / "via.mem").symlink_to("a.mem")

    listed = {path for path, _ in workspace_signature(workspace) or ()}
    walked = {os.path.relpath(p, workspace) for p in walk_sources(str(workspace))}
    assert listed == walked
    assert os.path.join(".git", "objects", "ab", "x.mem") in listed


async def test_sources_under_hidden_directories_are_reported(workspace: Path) -> None:
    (workspace / ".git").mkdir()
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        (workspace / ".git" / "x.mem").write_text('fact x { claim: "in git" }\n')
        assert await next_call(handler) == {workspace / ".git" / "x.mem"}

        # A new directory under .git is looked into, not answered with a full re-read.
        made = workspace / ".git" / "objects" / "cd"
        made.mkdir(parents=True)
        (made / "y.mem").write_text('fact y { claim: "deeper" }\n')
        seen: set[Path] = set()
        while workspace / ".git" / "objects" / "cd" / "y.mem" not in seen:
            paths = await next_call(handler)
            assert paths is not None
            seen |= paths

        # Git's own churn costs nothing.
        (workspace / ".git" / "objects" / "ef").mkdir()
        (workspace / ".git" / "objects" / "ef" / "0123").write_text("blob")
        (workspace / ".git" / "index").write_text("index")
        assert await no_call_within(handler, 0.3)


async def test_the_rescan_finds_sources_under_hidden_directories(workspace: Path) -> None:
    async with watching(workspace, events=False, rescan_interval_s=0.05) as handler:
        assert await no_call_within(handler, 0.2)
        (workspace / ".hg").mkdir()
        (workspace / ".hg" / "x.mem").write_text('fact x { claim: "in hg" }\n')
        assert await next_call(handler) is None
        assert await no_call_within(handler, 0.2)


async def test_an_event_on_a_link_target_reports_the_link(workspace: Path) -> None:
    target = workspace / "sub" / "target.txt"
    target.write_text('fact t { claim: "one" }\n')
    (workspace / "via.mem").symlink_to(os.path.join("sub", "target.txt"))
    (workspace / "hop.txt").symlink_to("end.txt")
    (workspace / "end.txt").write_text('fact e { claim: "one" }\n')
    (workspace / "chain.mem").symlink_to("hop.txt")
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        target.write_text('fact t { claim: "two" }\n')
        assert await next_call(handler) == {workspace / "via.mem"}

        (workspace / "end.txt").write_text('fact e { claim: "two" }\n')
        assert await next_call(handler) == {workspace / "chain.mem"}

        # The link in between pointed elsewhere: that is a change of chain.mem too.
        (workspace / "other.txt").write_text('fact o { claim: "other" }\n')
        (workspace / "hop.txt").unlink()
        (workspace / "hop.txt").symlink_to("other.txt")
        assert await next_call(handler) == {workspace / "chain.mem"}
        while not await no_call_within(handler, 0.1):
            pass
        (workspace / "other.txt").write_text('fact o { claim: "edited" }\n')
        assert await next_call(handler) == {workspace / "chain.mem"}
        (workspace / "end.txt").write_text('fact e { claim: "no longer linked" }\n')
        assert await no_call_within(handler, 0.3)


async def test_links_made_or_removed_while_watching_are_followed(workspace: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text('fact n { claim: "one" }\n')
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        (workspace / "via.mem").symlink_to("notes.txt")
        assert await next_call(handler) == {workspace / "via.mem"}
        target.write_text('fact n { claim: "two" }\n')
        assert await next_call(handler) == {workspace / "via.mem"}

        (workspace / "via.mem").unlink()
        assert await next_call(handler) == {workspace / "via.mem"}
        target.write_text('fact n { claim: "three" }\n')
        assert await no_call_within(handler, 0.3)


async def test_a_link_whose_target_is_deleted_then_made_again_is_followed(
    workspace: Path,
) -> None:
    target = workspace / "notes.txt"
    target.write_text('fact n { claim: "one" }\n')
    (workspace / "via.mem").symlink_to("notes.txt")
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        target.unlink()  # the link dangles for a while
        assert await next_call(handler) == {workspace / "via.mem"}
        while not await no_call_within(handler, 0.1):
            pass
        target.write_text('fact n { claim: "back" }\n')
        assert await next_call(handler) == {workspace / "via.mem"}


async def test_links_found_by_a_full_walk_are_followed(workspace: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text('fact n { claim: "one" }\n')
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)
        # Made where no event reaches: in a directory moved in whole.
        outside = workspace.parent / "outside"
        outside.mkdir()
        (outside / "via.mem").symlink_to(os.path.join("..", "notes.txt"))
        os.rename(outside, workspace / "moved")
        assert await next_call(handler) is None
        while not await no_call_within(handler, 0.3):
            pass

        target.write_text('fact n { claim: "two" }\n')
        with anyio.fail_after(5):
            assert await next_call(handler) == {workspace / "moved" / "via.mem"}


async def test_a_directory_on_a_links_way_moved_reports_the_link(workspace: Path) -> None:
    drafts = workspace / "drafts"
    drafts.mkdir()
    (drafts / "target.txt").write_text('fact t { claim: "one" }\n')
    (workspace / "via.mem").symlink_to(os.path.join("drafts", "target.txt"))
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        # Moved out: inotify names the directory alone.
        os.rename(drafts, workspace.parent / "drafts")
        assert await next_call(handler) == {workspace / "via.mem"}


async def test_an_edit_through_one_name_of_a_hard_linked_source_reports_every_name(
    workspace: Path,
) -> None:
    os.link(workspace / "a.mem", workspace / "sub" / "twin.mem")
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        # When the file is appended to through one name (inotify names that one only)
        with open(workspace / "a.mem", "a") as handle:
            handle.write('fact more { claim: "appended" }\n')
        # Then every source name of the file is reported
        assert await next_call(handler) == {workspace / "a.mem", workspace / "sub" / "twin.mem"}

        with open(workspace / "sub" / "twin.mem", "a") as handle:
            handle.write('fact again { claim: "through the twin" }\n')
        assert await next_call(handler) == {workspace / "a.mem", workspace / "sub" / "twin.mem"}


async def test_a_hard_link_made_or_removed_while_watching_is_followed(workspace: Path) -> None:
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        # Given a second name made while watching (its event names the new name only)
        os.link(workspace / "a.mem", workspace / "twin.mem")
        assert await next_call(handler) == {workspace / "twin.mem"}
        # When the file is edited through its first name
        with open(workspace / "a.mem", "a") as handle:
            handle.write('fact more { claim: "appended" }\n')
        assert await next_call(handler) == {workspace / "a.mem", workspace / "twin.mem"}

        # Once the second name is removed, an edit is the first name's alone
        (workspace / "twin.mem").unlink()
        assert workspace / "twin.mem" in (await next_call(handler) or ())
        while not await no_call_within(handler, 0.1):
            pass
        with open(workspace / "a.mem", "a") as handle:
            handle.write('fact last { claim: "alone" }\n')
        assert await next_call(handler) == {workspace / "a.mem"}


async def test_an_edit_through_a_name_that_is_no_source_reports_the_source(
    workspace: Path,
) -> None:
    os.link(workspace / "sub" / "b.mem", workspace / "notes.txt")
    async with watching(workspace) as handler:
        await until_watching(workspace, handler)

        with open(workspace / "notes.txt", "a") as handle:
            handle.write('fact more { claim: "through the notes" }\n')

        assert await next_call(handler) == {workspace / "sub" / "b.mem"}
