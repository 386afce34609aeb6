"""A role set's view of a snapshot restored from the parse cache is made without making
the declarations it keeps (it reads their access policies from their saved form), and
answers exactly as the same view of the freshly parsed workspace: the same declarations,
index, query answers and lint.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import test_incremental_index as incremental

from memhubd.auth.access import is_readable
from memhubd.index import build_index, index_for
from memhubd.lint import lint
from memhubd.model.declaration import RestoredDeclarations, RestoredSubset
from memhubd.query import build_evidence_pack
from memhubd.runtime.cache import ParseCache
from memhubd.runtime.snapshot import build_snapshot, persist
from memhubd.service import access

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "team-coding"
QUERIES = [
    "payment sdk sandbox key logs",
    "retry ledger billing access",
    "review tests coverage",
    "vault rotation",
]
ROLE_SETS = [
    frozenset(),
    frozenset({"ops"}),
    frozenset({"qa"}),
    frozenset({"security"}),
    frozenset({"developer", "ops"}),
    frozenset({"maintainer", "security", "qa", "ops"}),
]

# Policies in each form a view reads: own `access_policy`, the legacy `access` block, a
# type's default, and none at all though the word `access` is in the text.
EDGES = """
fact vault.rotation {
  claim: "The vault keys rotate every access window of 30 days."
  evidence { source: "runbook" quote: "30 days" }
}

fact vault.ops {
  claim: "Vault rotation is paged to ops."
  evidence { source: "runbook" quote: "paged" }
  access_policy { readers: [ops] }
  supersedes: vault.old
}

fact vault.old {
  claim: "Vault rotation is by hand."
  evidence { source: "runbook" quote: "by hand" }
}

fact vault.qa {
  claim: "Vault rotation is tested in staging."
  evidence { source: "runbook" quote: "staging" }
  access { readers: [qa] }
}

secret_note vault.master {
  claim: "The master vault key sits in the ledger safe."
  evidence { source: "runbook" quote: "safe" }
}

secret_note vault.shown {
  claim: "The vault rotation calendar is public."
  evidence { source: "runbook" quote: "public" }
  access_policy { readers: [ops, qa, developer] }
}
"""

# A file no role set above may read any of (so its run is left out whole).
HIDDEN = """
fact ledger.secret {
  claim: "The ledger retry key is in the vault."
  evidence { source: "runbook" quote: "vault" }
  access_policy { readers: [auditor] }
}
"""


def _workspace(root: Path) -> Path:
    shutil.copytree(EXAMPLES, root)
    schema_path = root / "teamcode.memschema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    schema["types"]["secret_note"] = {
        "runtime_role": "assertion",
        "required_fields": ["claim", "evidence"],
        "capabilities": ["requires_evidence", "searchable"],
        "defaults": {"access_policy": {"readers": ["security"]}},
    }
    schema_path.write_text(json.dumps(schema), encoding="utf-8")
    (root / "vault.mem").write_text(EDGES, encoding="utf-8")
    (root / "secret.mem").write_text(HIDDEN, encoding="utf-8")
    return root


@pytest.fixture
def restored(tmp_path: Path) -> tuple[Any, Any]:
    """(the snapshot restored from the parse cache, the same workspace parsed)."""
    root = _workspace(tmp_path / "ws")
    state = tmp_path / "state"
    parsed = build_snapshot("views", str(root), None, cache=ParseCache(state))
    assert persist(parsed, ParseCache(state)) > 0
    again = build_snapshot("views", str(root), None, cache=ParseCache(state))
    assert all(isinstance(run, RestoredDeclarations) for run in _runs(again.workspace))
    return again, build_snapshot("views", str(root), None)


def _runs(ws: Any) -> list[Any]:
    return list(ws.declarations.runs)


def _made(snapshot: Any) -> dict[str, set[int]]:
    """Which declarations of each restored file have been made, by number in the file."""
    return {run.file.path: set(run.file._made) for run in _runs(snapshot.workspace)}  # noqa: SLF001


def _answers(ws: Any) -> dict[str, Any]:
    return {
        "ids": [(d.file, d.id, d.line) for d in ws.declarations],
        "elsewhere": sorted(ws.superseded_elsewhere),
        "packs": [build_evidence_pack(ws, q).as_dict() for q in QUERIES],
        "lint": [d.as_dict() for d in lint(ws)],
    }


@pytest.mark.parametrize("roles", ROLE_SETS, ids=lambda r: "+".join(sorted(r)) or "none")
def test_a_restored_snapshots_view_keeps_its_declarations_unmade_and_answers_the_same(
    restored: tuple[Any, Any], roles: frozenset[str]
) -> None:
    again, parsed = restored
    runs = {run[0].file: run for run in _runs(parsed.workspace)}
    hidden = {
        path: {at for at, d in enumerate(run) if not is_readable(d, roles)}
        for path, run in runs.items()
    }
    symbols = {
        path: {at for at, d in enumerate(run) if d.runtime_role == "symbol"}
        for path, run in runs.items()
    }
    # When a role set's view of the restored snapshot is made and indexed
    cut = access._cut_of(again, roles)  # noqa: SLF001 - what a token's request makes
    index = index_for(cut.workspace)

    # Then no declaration it keeps was made for it (a symbol's aliases are read)
    for path, made in _made(again).items():
        assert made <= hidden[path] | symbols[path], path
    # And a file it reads whole is the whole workspace's run and segment; one it reads
    # part of is a lazy part of that run
    whole = {run.file.path: run for run in _runs(again.workspace)}
    for run in _runs(cut.workspace):
        path = run.file.path
        if hidden[path]:
            assert isinstance(run, RestoredSubset) and run.file is whole[path].file
        else:
            assert run is whole[path]
    # And it answers as the same view of the freshly parsed workspace does
    fresh = parsed.workspace.restricted(lambda d: is_readable(d, roles))
    assert cut.hidden == {d.id for d in parsed.workspace.declarations if not is_readable(d, roles)}
    assert incremental._state(index) == incremental._state(build_index(fresh))  # noqa: SLF001
    assert _answers(cut.workspace) == _answers(fresh)
    # And it counts the MUST rules it hides from their left-out positions, as reading
    # each MUST rule's policy counts them
    whole = build_index(parsed.workspace)
    hidden_must = sum(
        1
        for slot in whole.space.members(whole.constraints)
        if not is_readable(whole.declarations[slot], roles)
    )
    assert cut.hidden_must_rules(again.workspace) == hidden_must
    assert access._cut_of(parsed, roles).hidden_must_rules(parsed.workspace) == hidden_must  # noqa: SLF001


def test_a_view_asked_for_twice_at_once_is_made_once_and_its_next_is_made_over_it(
    restored: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    again, _ = restored
    roles = frozenset({"qa"})
    made: list[Any] = []
    build = access._build_cut  # noqa: SLF001

    def slow_build(*args: Any) -> Any:
        made.append(args[1])
        time.sleep(0.2)  # long enough for the second caller to arrive meanwhile
        return build(*args)

    monkeypatch.setattr(access, "_build_cut", slow_build)
    # When a request and the warm step ask for the same view of a snapshot at once
    cuts: list[Any] = []
    callers = [
        threading.Thread(target=lambda: cuts.append(access._cut_of(again, roles)))  # noqa: SLF001
        for _ in range(2)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()

    # Then it is made once, and both get it
    assert made == [roles]
    assert cuts[0] is cuts[1]
    # And the role set's earlier results are that view's own runs, so the next
    # snapshot's view keeps each unchanged file's run and segment
    index_for(cuts[0].workspace)
    entry = access._EARLIER[(again.name, roles)]  # noqa: SLF001
    kept = [result[1] for result in entry.runs.values() if result[1]]
    assert all(a is b for a, b in zip(kept, _runs(cuts[0].workspace), strict=True))
