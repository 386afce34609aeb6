"""memctl's text forms of governed memory (query, check, map, lint) are what memdsl
prints, byte for byte, for declarations holding characters that render as nothing (a
soft hyphen, bidi marks, zero-width space, word joiner, private use) and tabs; only what
would act on a terminal (an escape sequence) is left out."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

from memhubd.cli import main as memhubd_main
from tests.integration.conftest import memctl, start_daemon

CLAIM = "Zucker\u00adwatte \u05e9\u05dc\u05d5\u05dd\u200f pua \ue000 zwsp a\u200bb wj \u2060. Never force push"
RULE = f"""module rules

boundary git.no_force_push_main {{
  rule: "{CLAIM} to main."
  scope: global
  force: hard
  guard {{
    deny_any: ["force push"]
  }}
}}
"""


def offline(*argv: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        memhubd_main(list(argv))
    return out.getvalue()


def test_memctl_prints_memdsls_text_forms_byte_for_byte(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "rules.mem").write_text(RULE, encoding="utf-8")
    with start_daemon(tmp_path, {"ws": str(root)}) as daemon:
        secret = daemon.admin_token
        commands = [
            (["query", "-q", "force push main"], ["query", str(root), "-q", "force push main"]),
            (
                ["check", "-t", "push", "-c", "git push --force origin main"],
                ["check", str(root), "-t", "push", "-c", "git push --force origin main"],
            ),
            (["map"], ["map", str(root)]),
        ]
        for online, offline_argv in commands:
            _code, out, _err = memctl(daemon, secret, "-w", "ws", *online)
            assert "\u00ad" in out and "\u200f" in out and "\ue000" in out
            assert out == offline(*offline_argv), online
