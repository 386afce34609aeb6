"""Shared test data for the review engine: a small workspace and valid proposal sources."""

from __future__ import annotations

from pathlib import Path

from memhubd.model import Workspace

BASE_MEM = """\
entity db {
  aliases: [database]
}

fact db.engine {
  subject: db
  claim: "The database is PostgreSQL."
  evidence { source: chat quote: "we use postgres" }
}
"""


def fact_source(name: str, claim: str = "A fact about the database.", extra: str = "") -> str:
    """A valid proposal source for a `fact` about `db`; `extra` adds field lines."""
    return (
        f"fact {name} {{\n"
        f"  subject: db\n"
        f"{extra}"
        f'  claim: "{claim}"\n'
        f'  evidence {{ source: chat quote: "{claim}" }}\n'
        f"}}\n"
    )


def make_workspace(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "base.mem").write_text(BASE_MEM, encoding="utf-8")
    return directory


def load(root: Path) -> Workspace:
    return Workspace.load([str(root)])


def snapshot_files(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes, to prove that nothing changed."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }
