"""A declaration restored from the parse cache answers its access policy as the parsed
one does (its own, the legacy `access` block, or its type's default) and decodes its
saved fields for it only when they could hold one."""

from __future__ import annotations

import json
from pathlib import Path

from memhubd.auth.access import readers_of
from memhubd.model.declaration import Declaration, RestoredDeclaration
from memhubd.runtime.cache import ParseCache
from memhubd.runtime.snapshot import build_snapshot, persist

SCHEMA = {
    "name": "guarded",
    "version": "1",
    "types": {
        "secret_note": {
            "runtime_role": "assertion",
            "required_fields": ["claim"],
            "capabilities": ["searchable"],
            "defaults": {"access_policy": {"readers": ["ops"]}},
        }
    },
}
SOURCE = """
fact open.fact { claim: "Builds run on every push." evidence { source: "ci" quote: "push" } }
fact own.policy {
  claim: "The staging key rotates weekly."
  evidence { source: "ops" quote: "weekly" }
  access_policy { readers: [security] }
}
fact legacy.block {
  claim: "The audit log is kept a year."
  evidence { source: "ops" quote: "a year" }
  access { readers: [auditor] }
}
fact mentions.word {
  claim: "Every access to the vault is logged."
  evidence { source: "ops" quote: "logged" }
}
guarded.secret_note default.policy { claim: "The vault unseal order is kept offline." }
guarded.secret_note own.over.default {
  claim: "The break-glass account is shared with the on-call lead."
  access_policy { readers: [lead] }
}
"""


def _fields_decoded(decl: Declaration) -> bool:
    try:
        Declaration.__dict__["fields"].__get__(decl)
    except AttributeError:
        return False
    return True


def test_a_restored_declarations_policy_is_the_parsed_ones(tmp_path: Path) -> None:
    # Given a workspace with policies of every origin, saved to the parse cache
    root = tmp_path / "ws"
    root.mkdir()
    (root / "memdsl.json").write_text(
        json.dumps({"schema_version": "memdsl.workspace.v1", "schemas": ["g.memschema.json"]})
    )
    (root / "g.memschema.json").write_text(json.dumps(SCHEMA))
    (root / "notes.mem").write_text(SOURCE)
    state = tmp_path / "state"
    persist(build_snapshot("w", str(root), None), ParseCache(state))
    parsed = {d.name: d for d in build_snapshot("w", str(root), None).workspace.declarations}
    # When it is restored and every declaration is asked for its policy
    restored = build_snapshot("w", str(root), None, cache=ParseCache(state))
    declarations = {d.name: d for d in restored.workspace.declarations}
    assert all(isinstance(d, RestoredDeclaration) for d in declarations.values())
    policies = {name: d.access_policy for name, d in declarations.items()}
    # Then each is the parsed declaration's, readers included
    assert policies == {name: d.access_policy for name, d in parsed.items()}
    assert {name: readers_of(d) for name, d in declarations.items()} == {
        "open.fact": frozenset(),
        "own.policy": {"security"},
        "legacy.block": {"auditor"},
        "mentions.word": frozenset(),
        "default.policy": {"ops"},
        "own.over.default": {"lead"},
    }
    # And only the fields that hold the word `access` were decoded to tell
    decoded = {name for name, d in declarations.items() if _fields_decoded(d)}
    assert decoded == {"own.policy", "legacy.block", "mentions.word", "own.over.default"}
