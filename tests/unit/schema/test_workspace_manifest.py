"""`memdsl.json` manifests: where they are looked for, what they load, how they fail (§2.1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memhubd.schema import (
    WORKSPACE_MANIFEST,
    WORKSPACE_SCHEMA_VERSION,
    SchemaError,
    TypeRegistry,
    manifest_paths,
    registry_for_paths,
)

STANDARD_NAMES = TypeRegistry.standard().names()


def write(path: Path, payload: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload), "utf-8")
    return path


def workspace_with_pack(root: Path, namespace: str = "dom", schemas: Any = None) -> Path:
    write(
        root / "packs" / "dom.memschema.json",
        {"name": namespace, "version": "1", "types": {"t": {}}},
    )
    manifest = {
        "schema_version": WORKSPACE_SCHEMA_VERSION,
        "schemas": schemas or ["packs/dom.memschema.json"],
    }
    return write(root / WORKSPACE_MANIFEST, manifest)


def schema_error(paths: list[str]) -> str:
    with pytest.raises(SchemaError) as caught:
        registry_for_paths(paths)
    return str(caught.value)


def test_without_a_manifest_only_the_standard_pack_is_loaded(tmp_path: Path) -> None:
    registry = registry_for_paths([str(tmp_path)])

    assert registry.names() == STANDARD_NAMES
    assert registry.schema_files == []


def test_a_manifest_loads_packs_relative_to_its_directory(tmp_path: Path) -> None:
    workspace_with_pack(tmp_path)

    registry = registry_for_paths([str(tmp_path)])

    assert registry.names() == sorted([*STANDARD_NAMES, "dom.t"])
    assert registry.schema_files == [str(tmp_path / "packs" / "dom.memschema.json")]


def test_a_file_path_uses_the_manifest_of_its_parent_directory(tmp_path: Path) -> None:
    workspace_with_pack(tmp_path)
    source = write(tmp_path / "memory.mem", "")

    assert "dom.t" in registry_for_paths([str(source)]).names()


def test_manifests_in_subdirectories_are_ignored(tmp_path: Path) -> None:
    workspace_with_pack(tmp_path / "nested")

    assert registry_for_paths([str(tmp_path)]).names() == STANDARD_NAMES


def test_manifests_are_deduplicated_and_kept_in_path_order(tmp_path: Path) -> None:
    first = workspace_with_pack(tmp_path / "one", "one")
    second = workspace_with_pack(tmp_path / "two", "two")
    paths = [str(tmp_path / "two"), str(tmp_path / "one"), str(tmp_path / "two" / "x.mem")]

    assert manifest_paths(paths) == [str(second), str(first)]
    assert {"one.t", "two.t"} <= set(registry_for_paths(paths).names())


def test_a_manifest_that_is_a_directory_is_not_a_manifest(tmp_path: Path) -> None:
    (tmp_path / WORKSPACE_MANIFEST).mkdir()

    assert manifest_paths([str(tmp_path)]) == []


def test_manifest_extra_keys_are_ignored_and_schemas_default_to_none(tmp_path: Path) -> None:
    write(tmp_path / WORKSPACE_MANIFEST, {"schema_version": WORKSPACE_SCHEMA_VERSION, "x": 1})

    assert registry_for_paths([str(tmp_path)]).names() == STANDARD_NAMES


@pytest.mark.parametrize(
    ("payload", "suffix"),
    [
        ({}, ": schema_version must be 'memdsl.workspace.v1'"),
        (
            {"schema_version": "memdsl.workspace.v2"},
            ": schema_version must be 'memdsl.workspace.v1'",
        ),
        ([], ": manifest root must be an object"),
        (
            {"schema_version": WORKSPACE_SCHEMA_VERSION, "schemas": "a.json"},
            ".schemas must be a list of strings",
        ),
        (
            {"schema_version": WORKSPACE_SCHEMA_VERSION, "schemas": [1]},
            ".schemas must contain only strings",
        ),
        (
            {"schema_version": WORKSPACE_SCHEMA_VERSION, "schemas": [" "]},
            ".schemas contains an empty value",
        ),
    ],
)
def test_invalid_manifests_raise_schema_errors(tmp_path: Path, payload: Any, suffix: str) -> None:
    manifest = write(tmp_path / WORKSPACE_MANIFEST, payload)

    assert schema_error([str(tmp_path)]) == f"{manifest}{suffix}"


def test_a_manifest_with_invalid_json_names_the_manifest(tmp_path: Path) -> None:
    manifest = write(tmp_path / WORKSPACE_MANIFEST, "{")

    message = schema_error([str(tmp_path)])

    assert message.startswith(f"{manifest}: invalid JSON: Expecting property name")


def test_a_listed_pack_that_is_missing_cannot_be_read(tmp_path: Path) -> None:
    write(
        tmp_path / WORKSPACE_MANIFEST,
        {"schema_version": WORKSPACE_SCHEMA_VERSION, "schemas": ["no.json"]},
    )

    assert schema_error([str(tmp_path)]).startswith(f"cannot read schema {tmp_path / 'no.json'}: ")


def test_the_first_failing_manifest_in_path_order_wins(tmp_path: Path) -> None:
    write(tmp_path / "a" / WORKSPACE_MANIFEST, {"schema_version": "bad-a"})
    write(tmp_path / "b" / WORKSPACE_MANIFEST, {"schema_version": "bad-b"})

    message = schema_error([str(tmp_path / "b"), str(tmp_path / "a")])

    assert message.startswith(str(tmp_path / "b" / WORKSPACE_MANIFEST))


def test_two_manifests_defining_the_same_type_differently_conflict(tmp_path: Path) -> None:
    workspace_with_pack(tmp_path / "a")
    write(
        tmp_path / "b" / "packs" / "dom.memschema.json",
        {"name": "dom", "version": "2", "types": {"t": {}}},
    )
    write(
        tmp_path / "b" / WORKSPACE_MANIFEST,
        {"schema_version": WORKSPACE_SCHEMA_VERSION, "schemas": ["packs/dom.memschema.json"]},
    )

    message = schema_error([str(tmp_path / "a"), str(tmp_path / "b")])

    assert (
        message
        == f"memory type 'dom.t' is already defined by {tmp_path / 'a' / 'packs' / 'dom.memschema.json'}"
    )
