"""TypeRegistry: registration rules and `.memschema.json` loading with memdsl's messages (§2.2-2.3)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from memhubd.schema import SchemaError, TypeDescriptor, TypeRegistry


def write_json(directory: Path, payload: Any, name: str = "dom.memschema.json") -> str:
    path = directory / name
    path.write_text(json.dumps(payload), encoding="utf-8")
    return str(path)


def pack(types: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": "dom", "version": "1", "types": types, **extra}


def load_error(tmp_path: Path, payload: Any) -> str:
    path = write_json(tmp_path, payload)
    with pytest.raises(SchemaError) as caught:
        TypeRegistry().load_schema(path)
    return str(caught.value)


# ---- register ---------------------------------------------------------------


def test_registering_an_identical_contract_again_is_a_no_op_keeping_the_first_source() -> None:
    registry = TypeRegistry()
    registry.register(TypeDescriptor(name="dom.t", runtime_role="assertion", source="/a.json"))

    registry.register(TypeDescriptor(name="dom.t", runtime_role="assertion", source="/b.json"))

    resolved = registry.resolve("dom.t")
    assert resolved is not None and resolved.source == "/a.json"


def test_registering_a_different_contract_names_the_previous_source() -> None:
    registry = TypeRegistry()
    registry.register(TypeDescriptor(name="dom.t", runtime_role="assertion", source="/a.json"))

    with pytest.raises(SchemaError) as caught:
        registry.register(TypeDescriptor(name="dom.t", runtime_role="guidance"))

    assert str(caught.value) == "memory type 'dom.t' is already defined by /a.json"


def test_defaults_compare_by_value_whatever_their_key_order() -> None:
    registry = TypeRegistry()
    registry.register(TypeDescriptor(name="t", runtime_role="assertion", defaults={"a": 1, "b": 2}))

    registry.register(TypeDescriptor(name="t", runtime_role="assertion", defaults={"b": 2, "a": 1}))

    assert registry.names() == ["t"]


def test_replace_overrides_an_existing_type() -> None:
    registry = TypeRegistry.standard()

    registry.register(TypeDescriptor(name="fact", runtime_role="guidance"), replace=True)

    fact = registry.resolve("fact")
    assert fact is not None and fact.runtime_role == "guidance"


def test_resolve_unknown_or_empty_name_gives_none() -> None:
    registry = TypeRegistry.standard()

    assert registry.resolve("nope") is None
    assert registry.resolve("") is None


def test_a_new_registry_is_empty() -> None:
    registry = TypeRegistry()

    assert registry.names() == []
    assert registry.schema_files == []


# ---- load_schema: success ---------------------------------------------------


def test_local_names_are_namespaced_unless_they_contain_a_dot(tmp_path: Path) -> None:
    path = write_json(tmp_path, pack({" rule ": {}, "x.y": {}, "fact": {}}))

    loaded = TypeRegistry().load_schema(path)

    assert [d.name for d in loaded] == ["dom.rule", "x.y", "dom.fact"]


def test_json_types_get_strict_json_defaults(tmp_path: Path) -> None:
    path = write_json(tmp_path, pack({"t": {}}))

    (descriptor,) = TypeRegistry().load_schema(path)

    assert descriptor.runtime_role == "assertion"
    assert descriptor.allow_extra_fields is False
    assert descriptor.claim_fields == ("claim",)
    assert descriptor.required_fields == ()
    assert descriptor.source == os.path.abspath(path)
    assert (descriptor.schema_name, descriptor.schema_version) == ("dom", "1")


def test_strings_are_stripped_and_null_lists_are_empty(tmp_path: Path) -> None:
    raw = {
        "runtime_role": " guidance ",
        "required_fields": [" owner "],
        "claim_fields": None,
        "role_field": " mode ",
        "role_map": {" on ": " constraint "},
        "diagnostic_codes": {" stale ": " too_old "},
        "defaults": {"force": "hard", "n": 3},
        "capabilities": ["searchable", "made_up"],
        "ignored_key": True,
    }
    path = write_json(tmp_path, pack({"t": raw}, ignored=1))

    (descriptor,) = TypeRegistry().load_schema(path)

    assert descriptor.runtime_role == "guidance"
    assert descriptor.required_fields == ("owner",)
    assert descriptor.claim_fields == ()
    assert descriptor.role_field == "mode"
    assert descriptor.role_map == {"on": "constraint"}
    assert descriptor.diagnostic_codes == {"stale": "too_old"}
    assert descriptor.defaults == {"force": "hard", "n": 3}
    assert descriptor.capabilities == {"searchable", "made_up"}


def test_schema_files_are_absolute_in_load_order_without_duplicates(tmp_path: Path) -> None:
    first = write_json(tmp_path, pack({"a": {}}), "a.json")
    second = write_json(tmp_path, {"name": "other", "version": "1", "types": {}}, "b.json")
    registry = TypeRegistry.standard()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        registry.load_schema("b.json")
    finally:
        os.chdir(cwd)

    registry.load_schema(first)
    registry.load_schema(first)

    assert registry.schema_files == [second, first]
    assert "dom.a" in registry.names()


def test_a_pack_cannot_redefine_a_standard_type(tmp_path: Path) -> None:
    path = write_json(tmp_path, pack({"fact": {"runtime_role": "guidance"}}))
    registry = TypeRegistry.standard()

    registry.load_schema(path)

    fact, dom_fact = registry.resolve("fact"), registry.resolve("dom.fact")
    assert fact is not None and fact.runtime_role == "assertion"
    assert dom_fact is not None and dom_fact.runtime_role == "guidance"


def test_the_same_pack_loaded_twice_is_accepted(tmp_path: Path) -> None:
    path = write_json(tmp_path, pack({"a": {"capabilities": ["searchable"]}}))
    copy = write_json(tmp_path, pack({"a": {"capabilities": ["searchable"]}}), "copy.json")
    registry = TypeRegistry()

    registry.load_schema(path)
    registry.load_schema(copy)

    resolved = registry.resolve("dom.a")
    assert resolved is not None and resolved.source == os.path.abspath(path)


# ---- load_schema: errors ----------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        {"version": "1", "types": {}},
        {"name": "  ", "version": "1", "types": {}},
        {"name": 3, "version": "1", "types": {}},
        {"name": "dom", "types": {}},
        {"name": "dom", "version": "1"},
        {"name": "dom", "version": "1", "types": []},
    ],
)
def test_name_version_and_object_types_are_required(tmp_path: Path, payload: dict) -> None:
    message = load_error(tmp_path, payload)

    path = os.path.abspath(tmp_path / "dom.memschema.json")
    assert message == f"{path}: schema requires name, version, and object-valued types"


def test_a_non_object_root_is_rejected(tmp_path: Path) -> None:
    path = os.path.abspath(tmp_path / "dom.memschema.json")

    assert load_error(tmp_path, ["x"]) == f"{path}: schema root must be an object"


def test_invalid_json_reports_the_decoder_message(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{nope", encoding="utf-8")

    with pytest.raises(SchemaError) as caught:
        TypeRegistry().load_schema(str(path))

    expected = "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    assert str(caught.value) == f"{path}: invalid JSON: {expected}"


def test_an_unreadable_schema_reports_the_os_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.json")

    with pytest.raises(SchemaError) as caught:
        TypeRegistry().load_schema(missing)

    assert str(caught.value) == (
        f"cannot read schema {missing}: [Errno 2] No such file or directory: '{missing}'"
    )


@pytest.mark.parametrize(
    ("types", "message"),
    [
        ({"t": []}, "{path}: type 't' must be an object"),
        ({"  ": {}}, "{path}: memory type name cannot be empty"),
        (
            {"t": {"defaults": []}},
            "{path}: type 'dom.t' defaults, role_map, and diagnostic_codes must be objects",
        ),
        (
            {"x.t": {"diagnostic_codes": "x"}},
            "{path}: type 'x.t' defaults, role_map, and diagnostic_codes must be objects",
        ),
        ({"t": {"runtime_role": None}}, "{path}: dom.t.runtime_role must be a string"),
        ({"t": {"role_field": 1}}, "{path}: dom.t.role_field must be a string"),
        (
            {"t": {"allow_extra_fields": "false"}},
            "{path}: dom.t.allow_extra_fields must be a boolean",
        ),
        ({"t": {"required_fields": "owner"}}, "dom.t.required_fields must be a list of strings"),
        ({"t": {"optional_fields": ["a", 1]}}, "dom.t.optional_fields must contain only strings"),
        ({"t": {"claim_fields": ["a", " "]}}, "dom.t.claim_fields contains an empty value"),
        ({"t": {"search_fields": {}}}, "dom.t.search_fields must be a list of strings"),
        ({"t": {"capabilities": [None]}}, "dom.t.capabilities must contain only strings"),
        ({"t": {"allowed_forces": [""]}}, "dom.t.allowed_forces contains an empty value"),
        (
            {"t": {"role_field": "f", "role_map": {"a": 1}}},
            "dom.t.role_map must contain only string keys and values",
        ),
        (
            {"t": {"diagnostic_codes": {" ": "x"}}},
            "dom.t.diagnostic_codes contains an empty key or value",
        ),
        ({"t": {"runtime_role": "fact"}}, "type 'dom.t' uses unknown runtime role(s): fact"),
        (
            {"t": {"role_map": {"strong": "guidance"}}},
            "type 'dom.t' defines role_map without role_field",
        ),
    ],
)
def test_type_errors_use_memdsl_messages(tmp_path: Path, types: dict, message: str) -> None:
    path = os.path.abspath(tmp_path / "dom.memschema.json")

    assert load_error(tmp_path, pack(types)) == message.format(path=path)


def test_validation_order_reports_the_first_broken_rule(tmp_path: Path) -> None:
    # Given a type breaking several rules at once
    broken = {
        "runtime_role": "bogus",
        "role_field": 3,
        "allow_extra_fields": "no",
        "required_fields": "x",
        "role_map": {"a": ""},
    }

    # Then each rule is only reported once the earlier ones are fixed
    path = os.path.abspath(tmp_path / "dom.memschema.json")
    assert load_error(tmp_path, pack({"t": broken})) == f"{path}: dom.t.role_field must be a string"
    broken["role_field"] = "f"
    assert load_error(tmp_path, pack({"t": broken})).endswith(
        "allow_extra_fields must be a boolean"
    )
    broken["allow_extra_fields"] = True
    assert (
        load_error(tmp_path, pack({"t": broken}))
        == "dom.t.required_fields must be a list of strings"
    )
    broken["required_fields"] = []
    assert (
        load_error(tmp_path, pack({"t": broken})) == "dom.t.role_map contains an empty key or value"
    )
    broken["role_map"] = {"a": "guidance"}
    assert (
        load_error(tmp_path, pack({"t": broken}))
        == "type 'dom.t' uses unknown runtime role(s): bogus"
    )


def test_a_conflicting_pack_stops_at_the_first_clashing_type(tmp_path: Path) -> None:
    first = write_json(tmp_path, pack({"a": {}}), "first.json")
    second = write_json(tmp_path, pack({"b": {}, "a": {"runtime_role": "guidance"}}), "second.json")
    registry = TypeRegistry()
    registry.load_schema(first)

    with pytest.raises(SchemaError) as caught:
        registry.load_schema(second)

    assert str(caught.value) == f"memory type 'dom.a' is already defined by {first}"
    assert registry.schema_files == [first]
