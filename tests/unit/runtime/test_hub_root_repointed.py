"""A workspace whose root is a link repointed at another served workspace's directory is
not served from there: each workspace has its own review queue and tokens, so one
directory served under two names would let a token of one read (and a reviewer of one
approve into) the other's files."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from memhubd.runtime.hub import Hub, WatchSettings

pytestmark = pytest.mark.anyio


def fact(name: str) -> str:
    return f'fact {name} {{\n  claim: "c"\n  evidence {{ source: "t" quote: "q" }}\n}}\n'


def served(hub: Hub, name: str) -> set[str]:
    host = hub.get(name)
    assert host is not None and host.snapshot is not None
    return {d.id for d in host.snapshot.workspace.declarations}


async def test_a_root_link_repointed_onto_another_workspace_keeps_what_it_served(
    tmp_path: Path,
) -> None:
    one, other, elsewhere = tmp_path / "one", tmp_path / "other", tmp_path / "elsewhere"
    for directory, name in ((one, "a.one"), (other, "b.secret"), (elsewhere, "c.moved")):
        directory.mkdir()
        (directory / "x.mem").write_text(fact(name), encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(one)
    hub = Hub(watch=WatchSettings(enabled=False, settle_ms=50, vanish_grace_ms=50))
    async with hub.running({"linked": str(link), "other": str(other)}):
        host = hub.get("linked")
        assert host is not None and served(hub, "linked") == {"fact:a.one"}
        for target in (other, other / "sub", tmp_path):  # is, lies in, holds the other's
            (other / "sub").mkdir(exist_ok=True)
            link.unlink()
            link.symlink_to(target)
            await host.reload()
            assert served(hub, "linked") == {"fact:a.one"}, target
            assert host.unavailable is not None
            message = host.unavailable.message
            assert "leads into (or above) another served workspace" in message
            assert "'other'" not in message and str(other) not in message  # no grant, maybe
        assert served(hub, "other") == {"fact:b.secret"}
        # Pointed at a directory of its own, it is served from there
        link.unlink()
        link.symlink_to(elsewhere)
        await host.reload()
        assert host.unavailable is None
        with anyio.fail_after(10):  # once its save rules let the new files in
            while served(hub, "linked") != {"fact:c.moved"}:
                await anyio.sleep(0.05)


async def test_a_root_link_that_never_built_is_checked_too(tmp_path: Path) -> None:
    broken, other = tmp_path / "broken", tmp_path / "other"
    for directory in (broken, other):
        directory.mkdir()
    (broken / "memdsl.json").write_text("{ not json", encoding="utf-8")
    (other / "x.mem").write_text(fact("b.secret"), encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(broken)
    hub = Hub(watch=WatchSettings(enabled=False))
    async with hub.running({"linked": str(link), "other": str(other)}):
        host = hub.get("linked")
        assert host is not None and host.snapshot is None  # its manifest never loaded
        link.unlink()
        link.symlink_to(other)
        await host.reload()
        assert host.snapshot is None
        assert host.unavailable is not None
        assert "another served workspace" in host.unavailable.message
