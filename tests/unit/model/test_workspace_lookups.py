"""Workspace loading (file walk, labels, registry) and its cached lookups (spec §1.6)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from textwrap import dedent

import pytest

from memhubd.lang import Document, ParseError, parse_text
from memhubd.model import ACTIVE_STATUSES, EXCLUDED_STATUSES, RELATION_FIELDS, Workspace
from memhubd.schema import SchemaError, TypeRegistry


def workspace(source: str) -> Workspace:
    document = parse_text(dedent(source), file="t.mem")
    return Workspace.from_documents([document], TypeRegistry.standard())


def ids(declarations: list) -> list[str]:
    return [d.id for d in declarations]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_model_constants() -> None:
    assert {"active"} == ACTIVE_STATUSES
    assert {"superseded", "retracted", "archived"} == EXCLUDED_STATUSES
    assert len(RELATION_FIELDS) == 9
    assert {"supersedes", "conflicts_with", "revision_of"} <= RELATION_FIELDS


# ---- loading ------------------------------------------------------------------


def test_a_directory_is_walked_top_down_with_sorted_files_and_only_mem_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "ws" / "b.mem", "fact b { }")
    write(tmp_path / "ws" / "a.mem", "fact a { }")
    write(tmp_path / "ws" / "notes.txt", "fact ignored { }")
    write(tmp_path / "ws" / ".hidden" / "h.mem", "fact h { }")
    monkeypatch.chdir(tmp_path)

    ws = Workspace.load(["ws"])

    assert ws.files[:2] == [os.path.join("ws", "a.mem"), os.path.join("ws", "b.mem")]
    assert sorted(ws.files[2:]) == [os.path.join("ws", ".hidden", "h.mem")]
    assert ids(ws.declarations)[:2] == ["fact:a", "fact:b"]
    assert ws.declarations[0].file == os.path.join("ws", "a.mem")


def test_file_labels_join_the_path_exactly_as_given(tmp_path: Path) -> None:
    write(tmp_path / "ws" / "sub" / "x.mem", "fact x { }")

    ws = Workspace.load([str(tmp_path / "ws") + "/"])

    assert ws.files == [str(tmp_path / "ws") + "/" + os.path.join("sub", "x.mem")]


def test_a_file_path_is_parsed_whatever_its_extension(tmp_path: Path) -> None:
    write(tmp_path / "memory.txt", "fact t { }")

    ws = Workspace.load([str(tmp_path / "memory.txt")])

    assert ids(ws.declarations) == ["fact:t"]


def test_paths_load_in_the_order_given_and_may_repeat(tmp_path: Path) -> None:
    write(tmp_path / "a.mem", "fact a { }")
    write(tmp_path / "z.mem", "fact z { }")

    ws = Workspace.load([str(tmp_path / "z.mem"), str(tmp_path)])

    assert ids(ws.declarations) == ["fact:z", "fact:a", "fact:z"]


def test_a_missing_path_raises_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        Workspace.load([str(tmp_path / "missing.mem")])


def test_a_parse_error_stops_loading(tmp_path: Path) -> None:
    write(tmp_path / "bad.mem", "fact { }")

    with pytest.raises(ParseError):
        Workspace.load([str(tmp_path)])


def test_without_a_registry_the_manifest_decides_the_types(tmp_path: Path) -> None:
    pack = {"name": "dom", "version": "1", "types": {"note": {"runtime_role": "guidance"}}}
    write(tmp_path / "dom.memschema.json", json.dumps(pack))
    manifest = {"schema_version": "memdsl.workspace.v1", "schemas": ["dom.memschema.json"]}
    write(tmp_path / "memdsl.json", json.dumps(manifest))
    write(tmp_path / "m.mem", "dom.note n { }")

    loaded = Workspace.load([str(tmp_path)])
    given = Workspace.load([str(tmp_path)], registry=TypeRegistry.standard())

    assert loaded.declarations[0].runtime_role == "guidance"
    assert given.declarations[0].runtime_role == "unknown"


def test_a_schema_error_is_raised_before_any_source_is_read(tmp_path: Path) -> None:
    write(tmp_path / "memdsl.json", "{}")
    write(tmp_path / "bad.mem", "not valid")

    with pytest.raises(SchemaError):
        Workspace.load([str(tmp_path)])


def test_from_documents_builds_a_workspace_without_disk() -> None:
    first = parse_text("module m\nfact a { }", file="virtual/a.mem")
    second = Document(module=None, uses=[], declarations=[], file="virtual/empty.mem")

    ws = Workspace.from_documents([first, second], TypeRegistry.standard())

    assert ws.files == ["virtual/a.mem", "virtual/empty.mem"]
    assert [(d.id, d.module, d.file) for d in ws.declarations] == [("fact:a", "m", "virtual/a.mem")]


def test_a_new_workspace_is_empty_with_the_standard_types() -> None:
    ws = Workspace()

    assert (ws.declarations, ws.files) == ([], [])
    assert ws.registry.names() == TypeRegistry.standard().names()


# ---- lookups ------------------------------------------------------------------


def test_by_id_finds_the_first_declaration_by_id_or_bare_name() -> None:
    ws = workspace("fact x { } decision x { } entity y { }")

    assert ws.by_id("decision:x").id == "decision:x"
    assert ws.by_id("x").id == "fact:x"
    assert ws.by_id("entity:x") is None
    assert ws.by_id(["unhashable"]) is None  # type: ignore[arg-type]


def test_by_ids_resolves_many_keys_like_by_id() -> None:
    ws = workspace("fact x { } decision x { } entity y { }")

    found = ws.by_ids(["x", "decision:x", "nope"])

    assert {key: d.id for key, d in found.items()} == {"x": "fact:x", "decision:x": "decision:x"}


def test_entities_are_all_symbol_declarations_whatever_their_status() -> None:
    ws = workspace("entity A { status: archived } fact f { } entity B { }")

    assert ids(ws.entities()) == ["entity:A", "entity:B"]


def test_known_names_hold_the_name_and_id_of_every_declaration() -> None:
    ws = workspace("fact f { status: retracted } runbook r { }")

    assert ws.known_names() == {"f", "fact:f", "r", "runbook:r"}


def test_known_symbols_are_symbol_names_plus_string_canonical_names() -> None:
    ws = workspace(
        'entity A { canonical_name: "Alpha" } entity B { canonical_name: [x] } fact f { canonical_name: Z }'
    )

    assert ws.known_symbols() == {"A", "Alpha", "B"}


def test_alias_map_lowercases_aliases_of_symbols_of_any_status() -> None:
    ws = workspace(
        """
        entity A { aliases: [Me, "The App"] }
        entity B { aliases: [me] status: archived }
        entity C { aliases: single }
        fact f { aliases: [me] }
        """
    )

    assert ws.alias_map() == {"me": ["A", "B"], "the app": ["A"]}
    assert ws.resolve_alias("ME") == ["A", "B"]
    assert ws.resolve_alias("nobody") == []


def test_active_filters_on_status_alone() -> None:
    ws = workspace(
        """
        fact a { status: candidate }
        fact b { status: superseded }
        fact c { lifecycle { status: archived } }
        fact d { status: whatever }
        fact e { status: retracted }
        fact f { supersedes: a }
        """
    )

    assert ids(ws.active()) == ["fact:a", "fact:d", "fact:f"]


def test_superseded_ids_are_raw_targets_from_every_declaration() -> None:
    ws = workspace(
        """
        fact a { supersedes: [b, "fact:c"] status: archived }
        fact d { relations { supersedes: e } }
        fact f { supports: g }
        """
    )

    assert ws.superseded_ids() == {"b", "fact:c", "e"}


def test_lookups_are_refreshed_by_add_document() -> None:
    ws = workspace("entity A { aliases: [a] }")
    assert ws.by_id("B") is None and ws.resolve_alias("b") == []

    ws.add_document(parse_text("entity B { aliases: [b] } fact x { supersedes: A }", "u.mem"))

    assert ws.by_id("B").id == "entity:B"
    assert ws.resolve_alias("b") == ["B"]
    assert ws.known_names() >= {"B", "entity:B", "x"}
    assert ws.superseded_ids() == {"A"}
    assert ws.files == ["t.mem", "u.mem"]


def test_returned_lists_are_copies_and_sets_are_frozen() -> None:
    ws = workspace("entity A { aliases: [a] } fact f { }")

    ws.active().clear()
    ws.entities().clear()
    ws.alias_map()["a"].append("X")
    ws.resolve_alias("a").append("Y")

    assert ids(ws.active()) == ["entity:A", "fact:f"]
    assert ids(ws.entities()) == ["entity:A"]
    assert ws.resolve_alias("a") == ["A"]
    assert isinstance(ws.known_names(), frozenset)
