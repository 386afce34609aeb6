"""Workspace-wide lint checks: duplicates, ambiguous aliases, supersedes, module budget."""

from __future__ import annotations

from lint_fixtures import codes, lint_text, only

EV = "evidence { source: chat }"


# ---- duplicate_declaration_id -----------------------------------------------------


def test_a_repeated_id_is_an_error_on_the_later_declaration_pointing_at_the_first() -> None:
    diags = lint_text(f"\nfact x {{ {EV} }}", f"fact y {{ {EV} }}\nfact x {{ {EV} claim: c }}")

    (diag,) = only(diags, "duplicate_declaration_id")
    assert (diag.severity, diag.file, diag.line, diag.decl_id) == ("error", "b.mem", 2, "fact:x")
    assert diag.message == "'fact:x' already declared at a.mem:2"


def test_each_repeat_points_at_the_very_first_declaration() -> None:
    diags = lint_text("entity x { }\nentity x { }\nentity x { }")

    assert [d.message for d in diags] == ["'entity:x' already declared at a.mem:1"] * 2
    assert [d.line for d in diags] == [2, 3]


def test_same_name_under_another_type_is_not_a_duplicate_id() -> None:
    assert lint_text(f"fact x {{ {EV} }} decision x {{ {EV} }}") == []


# ---- duplicate_declaration --------------------------------------------------------


def test_same_type_subject_scope_and_claim_is_a_duplicate_warning() -> None:
    diags = lint_text(
        f"""
        entity User {{ }}
        fact a {{ subject: User scope: home claim: "Likes Tea" {EV} }}
        fact b {{ subject: User scope: home claim: "  likes tea " {EV} }}
        """
    )

    (diag,) = diags
    assert (diag.code, diag.severity, diag.line, diag.decl_id) == (
        "duplicate_declaration",
        "warning",
        4,
        "fact:b",
    )
    assert diag.message == "'fact:b' duplicates 'fact:a' (same type/subject/scope/claim)"


def test_content_duplicates_need_every_part_equal() -> None:
    diags = lint_text(
        f"""
        entity User {{ }}
        fact a {{ claim: "c" {EV} }}
        fact b {{ claim: "c" scope: home {EV} }}
        fact c {{ claim: "c" subject: User {EV} }}
        decision d {{ claim: "c" {EV} }}
        """
    )

    assert diags == []


def test_empty_claims_are_never_content_duplicates() -> None:
    assert lint_text(f'fact a {{ claim: " " {EV} }} fact b {{ claim: " " {EV} }}') == []


def test_a_repeated_id_is_not_also_reported_as_duplicate_content() -> None:
    diags = lint_text(f'fact a {{ claim: "c" {EV} }} fact a {{ claim: "c" {EV} }}')

    assert codes(diags) == ["duplicate_declaration_id"]


def test_content_duplicates_all_point_at_the_first_one() -> None:
    diags = lint_text(
        f'fact a {{ claim: "c" {EV} }}\nfact b {{ claim: "c" {EV} }}\nfact c {{ claim: "C" {EV} }}'
    )

    assert [d.message.split("'")[3] for d in diags] == ["fact:a", "fact:a"]


# ---- ambiguous_alias ------------------------------------------------------------


def test_an_alias_shared_by_two_symbols_is_ambiguous() -> None:
    diags = lint_text(
        """
        entity Zed { aliases: [Boss] }
        entity Amy { aliases: [boss, me] }
        entity Amy2 { aliases: [me] status: archived }
        """
    )

    assert [d.message for d in diags] == [
        "alias 'boss' resolves to multiple symbols: Amy, Zed",
        "alias 'me' resolves to multiple symbols: Amy, Amy2",
    ]
    assert [(d.line, d.decl_id, d.severity) for d in diags] == [
        (3, None, "warning"),
        (3, None, "warning"),
    ]


def test_an_alias_repeated_by_one_symbol_is_not_ambiguous() -> None:
    assert lint_text("entity A { aliases: [x, X] }") == []


def test_ambiguous_alias_is_located_where_the_first_owner_name_is_first_found() -> None:
    # Given a fact named like the first owner, declared before that symbol
    diags = lint_text(
        f"fact Amy {{ {EV} }}",
        "entity Zed { aliases: [z] }\nentity Amy { aliases: [z] }",
    )

    (diag,) = only(diags, "ambiguous_alias")
    assert (diag.file, diag.line) == ("a.mem", 1)


# ---- unmarked_supersede_status --------------------------------------------------


def test_a_superseded_target_still_active_is_flagged_at_the_target() -> None:
    diags = lint_text(
        f"""
        decision old {{ {EV} }}
        decision new {{ {EV} supersedes: old }}
        """
    )

    (diag,) = diags
    assert (diag.code, diag.severity, diag.line, diag.decl_id) == (
        "unmarked_supersede_status",
        "warning",
        2,
        "decision:old",
    )
    assert diag.message == (
        "'decision:old' is superseded by a newer declaration but its status is 'active'; "
        "mark it status: superseded"
    )


def test_targets_marked_superseded_retracted_or_archived_are_fine() -> None:
    diags = lint_text(
        f"""
        fact a {{ {EV} status: superseded }}
        fact b {{ {EV} lifecycle {{ status: retracted }} }}
        fact c {{ {EV} status: archived }}
        fact d {{ {EV} status: candidate }}
        fact n {{ {EV} supersedes: [a, "fact:b", c, d] }}
        """
    )

    assert [(d.decl_id, d.message.split("'")[3]) for d in diags] == [("fact:d", "candidate")]


def test_each_distinct_target_string_is_checked_once() -> None:
    diags = lint_text(
        f"""
        fact a {{ {EV} }}
        fact n {{ {EV} supersedes: a }}
        fact m {{ {EV} relations {{ supersedes: [a, "fact:a"] }} }}
        """
    )

    assert codes(diags) == ["unmarked_supersede_status"] * 2


def test_a_wrongly_typed_target_passes_lint_and_hides_nothing() -> None:
    diags = lint_text(f'fact g {{ {EV} }} fact n {{ {EV} supersedes: "boundary:g" }}')

    assert diags == []


def test_the_superseder_status_does_not_matter() -> None:
    diags = lint_text(f"fact a {{ {EV} }} fact n {{ {EV} status: archived supersedes: a }}")

    assert codes(diags) == ["unmarked_supersede_status"]


# ---- module_too_large -----------------------------------------------------------


def entities(count: int, start: int = 0) -> str:
    return "\n".join(f"entity e{start + i} {{ }}" for i in range(count))


def test_a_module_over_budget_across_files_is_flagged_once_at_its_first_declaration() -> None:
    diags = lint_text(
        "fact a { }\nmodule big\n" + entities(30),
        "module big\n" + entities(21, start=30),
        "module small\n" + entities(50, start=100),
    )

    (diag,) = only(diags, "module_too_large")
    assert (diag.file, diag.line, diag.decl_id, diag.severity) == ("a.mem", 1, None, "warning")
    assert diag.message == "module 'big' has 52 declarations (budget 50); split it"


def test_declarations_without_a_module_share_one_budget() -> None:
    diags = lint_text(entities(26), "\n" + entities(25, start=26))

    (diag,) = diags
    assert diag.message == "module '<no module>' has 51 declarations (budget 50); split it"
    assert (diag.file, diag.line) == ("a.mem", 1)


def test_exactly_fifty_declarations_fit_the_budget() -> None:
    assert lint_text("module m\n" + entities(50)) == []
