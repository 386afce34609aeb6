"""The session-end hook cuts a transcript into parts at line feeds only: each part is
whole JSONL lines even when messages hold a raw U+2028, U+2029 or U+0085, which
`str.splitlines` would take for line ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctl import hooks


def test_every_part_is_whole_lines_when_messages_hold_raw_separators(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = ["clause 7.2\u2028clause 7.3", "first\u2029second", "one\u0085two"] * 4
    lines = [
        json.dumps({"type": "user", "message": {"role": "user", "content": t}}, ensure_ascii=False)
        for t in texts
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")  # no line feed after the last

    for budget in range(40, 400, 7):  # some budgets fall on a separator, some on a line end
        monkeypatch.setattr(hooks, "PART_BYTES", budget)
        parts = [p.content for p in hooks.transcript_parts(path, "p/s.jsonl")]

        assert "".join(parts) == "\n".join(lines)
        assert all(part.endswith("\n") for part in parts[:-1])
        read = [json.loads(line) for part in parts for line in part.split("\n") if line]
        assert [v["message"]["content"] for v in read] == texts
