"""A source file that does not load is shown as it is on disk to a caller who may read
everything (memdsl reads files from disk), and as last served, redacted, to others."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.integration.conftest import start_daemon

GOOD = 'fact good.one {\n  claim: "fine"\n  evidence { source: chat quote: "q" }\n}\n'
BROKEN = 'fact bad.one {\n  claim: "unterminated\n}\n'


def test_a_file_that_does_not_parse_is_read_from_disk_by_a_caller_who_sees_all(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws" / "w"
    root.mkdir(parents=True)
    (root / "good.mem").write_text(GOOD, encoding="utf-8")
    (root / "bad.mem").write_text(BROKEN, encoding="utf-8")
    with start_daemon(tmp_path, {"w": str(root)}) as live:
        limited = live.add_token("limited", "read:summary,read:search", workspaces=["w"])
        path = "/v1/workspaces/w/files/bad.mem"
        headers = {"accept": "application/json"}
        with live.http(live.admin_token) as http:
            whole = http.get(path, headers=headers)
        with live.http(limited) as http:
            served = http.get(path, headers=headers)
    assert whole.status_code == 200, whole.text
    assert whole.json()["content"] == BROKEN and whole.json()["stale"] is True
    assert served.status_code == 200, served.text
    assert served.json()["content"] == "" and served.json()["stale"] is True


def test_a_file_that_is_not_utf8_is_shown_with_its_bad_bytes_replaced(tmp_path: Path) -> None:
    # It never loaded, so nothing was served: the caller who sees all gets the file as
    # it is on disk, each byte that is not UTF-8 as U+FFFD, and `stale` says why.
    root = tmp_path / "ws" / "w"
    root.mkdir(parents=True)
    (root / "good.mem").write_text(GOOD, encoding="utf-8")
    (root / "latin.mem").write_bytes(b"module x\n# caf\xe9\n" + GOOD.encode())
    with start_daemon(tmp_path, {"w": str(root)}) as live, live.http(live.admin_token) as http:
        answer = http.get(
            "/v1/workspaces/w/files/latin.mem", headers={"accept": "application/json"}
        )
        raw = http.get("/v1/workspaces/w/files/latin.mem")
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"] == "module x\n# caf\ufffd\n" + GOOD
    assert answer.json()["stale"] is True
    assert raw.headers["x-memhub-stale"] == "true" and raw.text.startswith("module x\n# caf")


def test_memctl_cat_prints_the_file_and_warns_that_it_does_not_load(tmp_path: Path) -> None:
    root = tmp_path / "ws" / "w"
    root.mkdir(parents=True)
    (root / "good.mem").write_text(GOOD, encoding="utf-8")
    (root / "bad.mem").write_text(BROKEN, encoding="utf-8")
    with start_daemon(tmp_path, {"w": str(root)}) as live:
        base = [sys.executable, "-m", "memctl", "--url", live.url, "--token", live.admin_token]
        broken = subprocess.run(
            [*base, "-w", "w", "cat", "bad.mem"], capture_output=True, text=True, timeout=60
        )
        fine = subprocess.run(
            [*base, "-w", "w", "cat", "good.mem"], capture_output=True, text=True, timeout=60
        )
    assert broken.returncode == 0 and broken.stdout == BROKEN
    assert "bad.mem does not load now" in broken.stderr
    assert fine.returncode == 0 and fine.stdout == GOOD and fine.stderr == ""
