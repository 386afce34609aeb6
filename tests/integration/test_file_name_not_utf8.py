"""A source whose name is not UTF-8: the events library cannot decode it and failed
each watch of its workspace, which stopped every workspace's watching; no answer can
name it either. It is refused as a source (named with its odd bytes escaped), and the
workspaces' watches go on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon, wait_for

ODD = b"\xffodd.mem"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    first = copy_examples(tmp_path / "one", ["writing"])["writing"]
    second = copy_examples(tmp_path / "two", ["writing"])["writing"]
    # No periodic re-scan: what is served in time is what the watches delivered.
    with start_daemon(
        tmp_path, {"one": first, "two": second}, **{"watch.rescan_interval_s": 0}
    ) as live:
        yield live


def test_an_odd_name_is_refused_and_every_watch_goes_on(daemon: LiveDaemon) -> None:
    one, two = Path(daemon.workspaces["one"]), Path(daemon.workspaces["two"])
    with open(os.path.join(os.fsencode(one), ODD), "w") as handle:
        handle.write("module writing.odd\n")
    with daemon.http(daemon.admin_token) as client:

        def problems() -> list[dict]:
            return client.get("/v1/workspaces/one").json()["problems"]

        wait_for(lambda: any("not valid UTF-8" in p["message"] for p in problems()))
        (refused,) = [p for p in problems() if "not valid UTF-8" in p["message"]]
        assert refused["file"].endswith("\\xffodd.mem")
        for route in ("files", "lint", "map", "declarations"):
            assert client.get(f"/v1/workspaces/one/{route}").status_code == 200, route
        # Both workspaces still follow their files as they change.
        for name, root in (("two", two), ("one", one)):
            before = client.get(f"/v1/workspaces/{name}").json()["files"]
            (root / "late.mem").write_text("module writing.late\n")
            wait_for(
                lambda name=name, before=before: (
                    client.get(f"/v1/workspaces/{name}").json()["files"] == before + 1
                )
            )
