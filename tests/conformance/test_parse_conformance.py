"""Parser conformance: parse errors and parsed documents equal memdsl 0.5.1's."""

from __future__ import annotations

import pytest
from conformance_goldens import HERE, golden, inside, split_key, workspace_golden, workspace_keys

from memhubd.lang import ParseError, parse_file

PARSE_CASES = golden("parse_errors.json")
REJECTED = sorted(name for name, case in PARSE_CASES.items() if case["message"])
ACCEPTED = sorted(name for name, case in PARSE_CASES.items() if not case["message"])


def parse_relative(label: str, cwd):
    with inside(cwd):
        return parse_file(label)


@pytest.mark.parametrize("name", REJECTED)
def test_parse_error_has_reference_message_and_line(name: str) -> None:
    # Given a source file that memdsl rejects
    expected = PARSE_CASES[name]
    label = f"parse_errors/{name}"

    # When we parse it with the same relative label
    with pytest.raises(ParseError) as caught:
        parse_relative(label, HERE)

    # Then message, line and the rendered form all match
    error = caught.value
    assert (error.message, error.line) == (expected["message"], expected["line"])
    assert str(error) == expected["str"]
    assert error.file == label


@pytest.mark.parametrize("name", ACCEPTED)
def test_parse_accepts_sources_memdsl_accepts(name: str) -> None:
    expected = PARSE_CASES[name]

    document = parse_relative(f"parse_errors/{name}", HERE)

    assert len(document.declarations) == expected["declarations"]
    assert (document.module, list(document.uses)) == (expected["module"], expected["uses"])


@pytest.mark.parametrize("key", workspace_keys())
def test_parsed_documents_match_reference(key: str) -> None:
    # Given every file memdsl loaded for the workspace, by its relative label
    base, _ = split_key(key)
    for expected in workspace_golden(key)["documents"]:
        # When we parse the same file
        document = parse_relative(expected["file"], base)

        # Then module, uses and every declaration (line, module, raw fields) agree
        assert document.file == expected["file"]
        assert (document.module, list(document.uses)) == (expected["module"], expected["uses"])
        got = [
            {"kind": d.kind, "name": d.name, "line": d.line, "module": d.module, "fields": d.fields}
            for d in document.declarations
        ]
        assert got == expected["declarations"], expected["file"]


@pytest.mark.parametrize("key", workspace_keys())
def test_field_order_matches_reference_including_duplicate_keys(key: str) -> None:
    # Dict equality ignores order, so compare the field order separately.
    base, _ = split_key(key)
    for expected in workspace_golden(key)["documents"]:
        document = parse_relative(expected["file"], base)
        got = [list(d.fields) for d in document.declarations]
        assert got == [list(d["fields"]) for d in expected["declarations"]], expected["file"]
