"""A served file whose name holds a line break or a tab is read back by its name, as
listed (memdsl serves such files too)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from conftest import start_daemon

FACT = 'module m\n\nfact {name} {{\n  claim: "c"\n}}\n'


def test_a_file_named_with_a_line_break_or_a_tab_is_read_back_by_its_name(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    names = ["new\nline.mem", "tab\tname.mem", "plain.mem"]
    for n, name in enumerate(names):
        (root / name).write_text(FACT.format(name=f"m.f{n}"), encoding="utf-8")
    with (
        start_daemon(tmp_path, {"odd": str(root)}) as daemon,
        daemon.http(daemon.admin_token) as client,
    ):
        listed = client.get("/v1/workspaces/odd/files").json()
        served = sorted(Path(f["path"]).name for f in listed["files"])
        assert served == sorted(names)
        for n, name in enumerate(names):
            raw = client.get(f"/v1/workspaces/odd/files/{quote(name)}")
            assert raw.status_code == 200, (name, raw.text)
            assert f"m.f{n}" in raw.text
        # a trailing slash still names no file
        assert client.get(f"/v1/workspaces/odd/files/{quote(names[0])}/").status_code == 404
