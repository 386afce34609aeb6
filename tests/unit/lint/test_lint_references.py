"""`unresolved_symbol`: subjects and relation targets must name something declared."""

from __future__ import annotations

from lint_fixtures import lint_text, registry_with

from memhubd.schema import TypeDescriptor

EV = "evidence { source: chat }"


def test_an_undeclared_subject_is_an_error_located_at_the_subject() -> None:
    diags = lint_text(f"fact f {{\n  {EV}\n  subject: User.Barista\n}}")

    (diag,) = diags
    assert (diag.code, diag.severity, diag.line, diag.column) == (
        "unresolved_symbol",
        "error",
        1,
        3,
    )
    assert diag.message == "subject 'User.Barista' is not a declared symbol"


def test_a_subject_may_name_any_declaration_its_id_or_a_canonical_name() -> None:
    diags = lint_text(
        f"""
        fact other {{ {EV} status: archived }}
        entity Repo {{ canonical_name: "the-repo" }}
        fact a {{ {EV} subject: other }}
        fact b {{ {EV} subject: "fact:other" }}
        fact c {{ {EV} subject: the-repo }}
        """
    )

    assert diags == []


def test_an_empty_subject_is_not_checked() -> None:
    assert lint_text(f'fact f {{ {EV} subject: "" }}') == []


def test_a_default_subject_is_checked() -> None:
    note = TypeDescriptor(name="dom.note", runtime_role="assertion", defaults={"subject": "Ghost"})

    diags = lint_text("dom.note n { }", registry=registry_with(note))

    assert [d.message for d in diags] == ["subject 'Ghost' is not a declared symbol"]


def test_relation_targets_resolve_by_name_id_or_suffix_after_the_first_colon() -> None:
    diags = lint_text(
        f"""
        fact g {{ {EV} }}
        fact a {{ {EV} supports: [g, "fact:g", "boundary:g"] depends_on: "x:fact:g" }}
        """
    )

    assert diags == []


def test_each_unknown_target_is_reported_with_its_relation() -> None:
    source = f'fact a {{\n  {EV}\n  depends_on: [zz, "fact:yy"]\n  relations {{ refines: ww }}\n}}'

    diags = lint_text(source)

    assert [(d.message, d.column) for d in diags] == [
        ("relation 'depends_on' points to unknown declaration 'zz'", 3),
        ("relation 'depends_on' points to unknown declaration 'fact:yy'", 3),
        ("relation 'refines' points to unknown declaration 'ww'", 15),
    ]
    assert {(d.line, d.decl_id) for d in diags} == {(1, "fact:a")}


def test_targets_of_both_relation_sources_are_checked_with_their_positions() -> None:
    source = f"fact a {{ {EV}\n  relations {{ supports: x }}\n  supports: y\n}}"

    diags = lint_text(source)

    assert [(d.message.split("'")[-2], d.column) for d in diags] == [("y", 3), ("x", 15)]


def test_only_the_first_colon_splits_a_target() -> None:
    # "x:entity:g" -> "entity:g" is known; "x:fact:g" -> "fact:g" is not, though "g" is
    diags = lint_text(f'entity g {{ }}\nfact a {{ {EV} supports: ["x:entity:g", "x:fact:g"] }}')

    assert [d.message for d in diags] == [
        "relation 'supports' points to unknown declaration 'x:fact:g'"
    ]
