"""Roles enforce `access_policy.readers`: who sees which declaration, and raw files
with hidden declarations cut out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memhubd.auth import (
    HIDDEN_MARKER,
    Identity,
    is_visible,
    local_operator,
    redact_source,
    split_visible,
)
from memhubd.lang import parse_text
from memhubd.model import Declaration, Workspace
from memhubd.schema import TypeRegistry

SOURCE = """module team
fact open { claim: "everyone may read this" }
fact dev_only {
  claim: "developers and reviewers only"
  access_policy { readers: [developer, reviewer] writers: [maintainer] }
}
fact ops_legacy { claim: "ops, via the legacy block" access { readers: ops } }
fact nobody_listed { claim: "empty readers" access_policy { readers: [] } }
fact writers_only { claim: "no readers key" access_policy { writers: [maintainer] } }
"""


def declarations(
    source: str = SOURCE, registry: TypeRegistry | None = None
) -> dict[str, Declaration]:
    registry = registry or TypeRegistry.standard()
    workspace = Workspace.from_documents([parse_text(source, "team.mem")], registry)
    return {decl.name: decl for decl in workspace.declarations}


def caller(*roles: str) -> Identity:
    return Identity(name="agent", scopes=frozenset({"read:search"}), roles=frozenset(roles))


def visible_names(identity: Identity, source: str = SOURCE) -> list[str]:
    return [name for name, decl in declarations(source).items() if is_visible(decl, identity)]


# ---- visibility ----------------------------------------------------------


def test_caller_without_roles_sees_only_unrestricted_declarations() -> None:
    assert visible_names(caller()) == ["open", "nobody_listed", "writers_only"]


def test_a_matching_role_reveals_a_restricted_declaration() -> None:
    assert "dev_only" in visible_names(caller("reviewer"))
    assert "ops_legacy" not in visible_names(caller("reviewer"))


def test_readers_given_as_a_single_value_still_restrict() -> None:
    assert "ops_legacy" in visible_names(caller("ops"))
    assert "ops_legacy" not in visible_names(caller("developer"))


def test_star_role_and_local_operator_see_everything() -> None:
    everything = list(declarations())
    assert visible_names(caller("*")) == everything
    assert visible_names(local_operator()) == everything


def test_readers_that_are_not_strings_are_compared_as_text() -> None:
    source = 'fact numbered { claim: "c" access_policy { readers: [[team, 7], ops] } }\n'
    assert visible_names(caller("ops"), source) == ["numbered"]
    assert visible_names(caller("team"), source) == []


def test_readers_from_a_type_default_restrict_too(tmp_path: Path) -> None:
    schema = {
        "name": "sec",
        "version": "1",
        "types": {
            "secret_note": {
                "runtime_role": "assertion",
                "defaults": {"access_policy": {"readers": ["security"]}},
            }
        },
    }
    path = tmp_path / "sec.memschema.json"
    path.write_text(json.dumps(schema))
    registry = TypeRegistry.standard()
    registry.load_schema(str(path))
    note = declarations('sec.secret_note n { claim: "c" }\n', registry)["n"]
    assert not is_visible(note, caller("developer"))
    assert is_visible(note, caller("security"))


def test_split_visible_keeps_order_and_counts_the_hidden() -> None:
    visible, hidden = split_visible(declarations().values(), caller("ops"))
    assert [decl.name for decl in visible] == [
        "open",
        "ops_legacy",
        "nobody_listed",
        "writers_only",
    ]
    assert hidden == 1


# ---- redaction -----------------------------------------------------------

RAW = """module team
fact open { claim: "visible" }
fact dev_only {
  claim: "secret"
  access_policy { readers: [developer] }
}
  fact a { claim: "x" } fact b { claim: "y" }
"""
DEV_ONLY = (3, 1, 6, 1)
A_ON_LINE_7 = (7, 3, 7, 23)
B_ON_LINE_7 = (7, 25, 7, 45)


def test_redaction_replaces_a_multiline_declaration_with_one_comment_line() -> None:
    redacted = redact_source(RAW, [DEV_ONLY])
    assert redacted.splitlines() == [
        "module team",
        'fact open { claim: "visible" }',
        HIDDEN_MARKER,
        '  fact a { claim: "x" } fact b { claim: "y" }',
    ]
    assert "secret" not in redacted


def test_text_after_a_hidden_span_on_the_same_line_moves_below_the_comment() -> None:
    redacted = redact_source(RAW, [A_ON_LINE_7])
    assert redacted.splitlines()[-2:] == [f"  {HIDDEN_MARKER}", 'fact b { claim: "y" }']


def test_redacted_source_still_parses_to_exactly_the_visible_declarations() -> None:
    redacted = redact_source(RAW, [B_ON_LINE_7, DEV_ONLY, A_ON_LINE_7])
    names = [decl.name for decl in parse_text(redacted, "team.mem").declarations]
    assert names == ["open"]
    assert redacted.count(HIDDEN_MARKER) == 3


def test_no_hidden_spans_leaves_the_text_untouched() -> None:
    assert redact_source(RAW, []) == RAW


@pytest.mark.parametrize(
    "spans",
    [
        [(3, 1, 6, 2)],  # end past the closing brace
        [(3, 1, 5, 3)],  # end not on a brace
        [(3, 1, 99, 1)],  # line out of range
        [(3, 0, 6, 1)],  # column out of range
        [DEV_ONLY, (4, 1, 6, 1)],  # overlapping
    ],
)
def test_bad_spans_are_refused_rather_than_leaking_text(spans) -> None:
    with pytest.raises(ValueError):
        redact_source(RAW, spans)


APPROVED = """module team
fact open { claim: "visible" }

# approved from proposal p-20261204-131026-8cfc57 at 2026-12-04T13:10:26+00:00
fact dev_only {
  claim: "secret"
  access_policy { readers: [developer] }
}

# approved from proposal p-20261204-131100-aaaaaa at 2026-12-04T13:11:00+00:00
fact shown { claim: "visible too" }
"""


def test_the_approval_comment_of_a_hidden_declaration_is_hidden_with_it() -> None:
    redacted = redact_source(APPROVED, [(5, 1, 8, 1)])
    assert "8cfc57" not in redacted and "13:10:26" not in redacted
    assert redacted.splitlines() == [
        "module team",
        'fact open { claim: "visible" }',
        "",
        HIDDEN_MARKER,
        "",
        "# approved from proposal p-20261204-131100-aaaaaa at 2026-12-04T13:11:00+00:00",
        'fact shown { claim: "visible too" }',
    ]
    names = [decl.name for decl in parse_text(redacted, "team.mem").declarations]
    assert names == ["open", "shown"]


def test_a_comment_not_right_above_a_hidden_declaration_stays() -> None:
    text = APPROVED.replace("13:10:26+00:00\nfact dev_only", "13:10:26+00:00\n\nfact dev_only")
    redacted = redact_source(text, [(6, 1, 9, 1)])
    assert "8cfc57" in redacted and "secret" not in redacted


def test_a_hidden_proposal_that_began_with_comments_is_hidden_to_its_approval_line() -> None:
    text = APPROVED.replace(
        "13:10:26+00:00\nfact dev_only",
        "13:10:26+00:00\n# Context: the incident review\nfact dev_only",
    )
    redacted = redact_source(text, [(6, 1, 9, 1)])
    assert "8cfc57" not in redacted and "incident review" not in redacted
    assert redacted.splitlines()[2:4] == ["", HIDDEN_MARKER]
    # A comment block with no approval line above it stays as it is
    plain = text.replace(
        "# approved from proposal p-20261204-131026-8cfc57 at 2026-12-04T13:10:26+00:00\n", ""
    )
    kept = redact_source(plain, [(5, 1, 8, 1)])
    assert "# Context: the incident review" in kept and "secret" not in kept
