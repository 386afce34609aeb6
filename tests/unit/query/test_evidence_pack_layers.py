"""What goes in which layer of an EvidencePack (spec §4.2-4.7)."""

from __future__ import annotations

from workspace_loading import Loader

from memhubd.query import build_evidence_pack

FAN_OUT = """
    fact deploy.window { claim: "Deploys happen on Tuesday" subject: Repo scope: release }
    boundary rule.same_scope { rule: "Freeze releases during audits" scope: release }
    boundary rule.same_subject { rule: "Never rewrite history" subject: Repo scope: git }
    boundary rule.global { rule: "Keep secrets out of logs" scope: global }
    boundary rule.unrelated { rule: "No meetings before ten" scope: calendar }
    boundary rule.old_global { rule: "Old policy" scope: global }
    boundary rule.replacement { rule: "New policy" scope: calendar supersedes: rule.old_global }
    entity Repo {}
"""


def ids(items: list) -> list[str]:
    return [getattr(item, "declaration", item).id for item in items]


def test_must_fans_out_to_constraints_sharing_scope_or_subject_plus_globals(load: Loader) -> None:
    # Given a fact in scope `release` about `Repo`, and constraints around it
    ws = load(FAN_OUT)

    # When a query matches only the fact
    pack = build_evidence_pack(ws, "tuesday deploys")

    # Then MUST holds the constraints sharing its scope or subject and the live global
    # one, in workspace order; the superseded global rule and the unrelated one are out
    assert ids(pack.context) == ["fact:deploy.window"]
    assert ids(pack.must) == [
        "boundary:rule.same_scope",
        "boundary:rule.same_subject",
        "boundary:rule.global",
    ]


def test_global_constraints_apply_even_when_nothing_matches(load: Loader) -> None:
    pack = build_evidence_pack(load(FAN_OUT), "zebra crossing")

    assert ids(pack.must) == ["boundary:rule.global"]
    assert pack.missing == ["no declarations matched query terms: ['zebra', 'crossing']"]


def test_type_filter_hides_the_hit_and_its_fan_out_but_says_so(load: Loader) -> None:
    pack = build_evidence_pack(load(FAN_OUT), "tuesday deploys", types=["decision"])

    assert ids(pack.must) == ["boundary:rule.global"]
    assert pack.missing == [
        "no declarations matched query terms: ['tuesday', 'deploys']",
        "1 declaration(s) matched the query but were excluded by type/subject filters",
    ]
    assert pack.trace["candidates_considered"] == 0
    assert pack.trace["excluded_by_filters"] == [
        {
            "id": "fact:deploy.window",
            "type": "fact",
            "subject": "Repo",
            "matched_terms": ["deploys", "tuesday"],
        }
    ]


LAYERS = """
    preference style.strong { claim: "Prefer short deploy notes" force: strong }
    preference style.soft { claim: "Deploy notes may use emoji" force: advisory }
    principle care { claim: "Deploy with care" }
    open_issue keys.owner { claim: "Who owns deploy keys?" next_action: ask }
    open_issue keys.rotation { claim: "Deploy keys rotation" next_action: ask }
"""


def test_limit_applies_before_layering_but_not_to_questions(load: Loader) -> None:
    # Given five equally scored matches: guidance, assertion, guidance, two questions
    pack = build_evidence_pack(load(LAYERS), "deploy", limit=2)

    # Then the first two (workspace order breaks the tie) are layered by role ...
    assert ids(pack.should) == ["preference:style.strong"]
    assert ids(pack.context) == ["preference:style.soft"]
    # ... and every scored question is reported as missing, limit or not
    assert pack.missing == [
        "question [open_issue:keys.owner]: Who owns deploy keys?",
        "question [open_issue:keys.rotation]: Deploy keys rotation",
    ]


def test_zero_limit_means_no_hits_and_a_negative_limit_drops_the_tail(load: Loader) -> None:
    ws = load(LAYERS)

    assert build_evidence_pack(ws, "deploy", limit=0).trace["hits"] == 0
    assert build_evidence_pack(ws, "deploy", limit=0).missing[0].startswith("no declarations")
    trimmed = build_evidence_pack(ws, "deploy", limit=-3)
    assert trimmed.trace["hits"] == 2
    assert ids(trimmed.should) == ["preference:style.strong"]


SUPERSESSION = """
    fact old.way { claim: "Deploy by hand" }
    fact new.way { claim: "Deploy with the pipeline" supersedes: old.way status: archived }
    fact keep { claim: "Deploy logs are kept" }
    fact typo.target { claim: "Deploy on Fridays" }
    decision retarget { decision: "Deploy daily" supersedes: "boundary:typo.target" }
    fact gone { claim: "Deploy gone" status: retracted }
    fact maybe { claim: "Deploy maybe" status: archived lifecycle { status: candidate } }
"""


def test_superseded_retracted_and_archived_declarations_are_not_served(load: Loader) -> None:
    pack = build_evidence_pack(load(SUPERSESSION), "deploy")

    # An archived superseder still hides its target (by bare name); a target with
    # the wrong type prefix hides nothing; the nested lifecycle status wins.
    assert ids(pack.context) == [
        "fact:keep",
        "fact:typo.target",
        "decision:retarget",
        "fact:maybe",
    ]


SCORING = """
    entity Project.Aurora { aliases: [aurora, al] }
    fact a.one { claim: "Pricing for the tier" subject: Project.Aurora }
    fact a.two { claim: "Tier limits" confidence: high }
    fact a.three { claim: "Tier pricing details" }
"""


def test_aliases_match_as_substrings_and_resolved_subjects_score_two(load: Loader) -> None:
    # Given the alias `al`, which occurs inside the word "also"
    pack = build_evidence_pack(load(SCORING), "also tier pricing")

    assert pack.resolved_subjects == ["Project.Aurora"]
    assert pack.trace["matched_aliases"] == {"al": ["Project.Aurora"]}
    # Then: 2 terms + 2 (subject); 2 terms; 1 term + 0.25 (high confidence)
    assert [(s.declaration.name, s.score) for s in pack.context] == [
        ("a.one", 4.0),
        ("a.three", 2.0),
        ("a.two", 1.25),
    ]
    assert pack.context[0].matched_terms == ["pricing", "subject:Project.Aurora", "tier"]


def test_subject_filter_makes_every_declaration_about_it_a_hit(load: Loader) -> None:
    ws = load(SCORING)

    about = build_evidence_pack(ws, "zebra", subject="Project.Aurora")
    nobody = build_evidence_pack(ws, "tier", subject="Ghost")

    assert [(s.declaration.name, s.score) for s in about.context] == [("a.one", 2.0)]
    assert about.resolved_subjects == ["Project.Aurora"]
    assert "no declarations found for subject 'Ghost'" in nobody.missing
    assert nobody.resolved_subjects == ["Ghost"]


CONFLICTS = """
    decision d.one { decision: "Free tier stays" relations { conflicts_with: "fact:f.two" } }
    fact f.two { claim: "Free tier ends" conflicts_with: [d.one, f.hidden] }
    fact f.three { claim: "Free tier reviewed" conflicts_with: "other:d.one" }
    fact f.hidden { claim: "Unrelated" }
"""


def test_conflicts_need_both_ends_selected_and_are_listed_per_declaring_side(
    load: Loader,
) -> None:
    pack = build_evidence_pack(load(CONFLICTS), "free tier")

    # Full id, bare name and the suffix after the first colon all identify a
    # selected declaration; the unselected `f.hidden` produces nothing.
    assert [(d.id, target) for d, target in pack.conflicts] == [
        ("decision:d.one", "fact:f.two"),
        ("fact:f.two", "d.one"),
        ("fact:f.three", "other:d.one"),
    ]


def test_filtered_match_sharing_its_id_with_a_candidate_is_not_reported(load: Loader) -> None:
    # Given two declarations with the same id, only one about the filtered subject
    ws = load(
        """
        fact dup { claim: "Deploy here" subject: Repo }
        fact dup { claim: "Deploy there" subject: Other }
        fact solo { claim: "Deploy elsewhere" subject: Other }
        """
    )

    pack = build_evidence_pack(ws, "deploy", subject="Repo")

    # Then memdsl's id comparison keeps the twin out of the excluded matches
    assert pack.trace["excluded_by_filters_total"] == 1
    assert [e["id"] for e in pack.trace["excluded_by_filters"]] == ["fact:solo"]
