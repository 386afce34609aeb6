"""Hypothesis strategies: small random workspaces and the queries and checks to run on them.

Vocabularies are deliberately tiny so that names, ids, subjects, scopes, aliases and
supersedes targets collide often: collisions are where an index can go wrong.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from memhubd.lang.tree import Document, RawDeclaration
from memhubd.model import Workspace
from memhubd.schema import TypeDescriptor, TypeRegistry

WORDS = [
    "force", "push", "main", "deploy", "the", "of", "never", "must", "user", "before",
    "public", "blog", "family", "meeting", "no_force", "x2", "Aurora", "tier", "事実",
    "Kelvin\u212a", "day", "job",
]  # fmt: skip
NAMES = ["a", "b", "a.b", "push.main", "User", "Project.Aurora"]
SUBJECTS = ["User", "Project.Aurora", "a.b", "Ghost", ""]
SCOPES = ["global", "calendar", 'repository("x")', "", "Global"]
STATUSES = ["active", "candidate", "superseded", "retracted", "archived", "odd"]
ALIASES = ["aurora", "day job", "a", "", "me", "用户", "push main"]
STANDARD_KINDS = ["entity", "fact", "preference", "boundary", "principle", "decision", "state",
                  "open_issue", "goal"]  # fmt: skip
CUSTOM_KINDS = ["dom.rule", "dom.soft", "dom.ask", "dom.note", "dom.pref"]
KINDS = STANDARD_KINDS + CUSTOM_KINDS + ["mystery"]

CUSTOM_TYPES = (
    TypeDescriptor(
        name="dom.rule",
        runtime_role="constraint",
        capabilities=frozenset({"searchable", "enforceable", "guardable"}),
    ),
    # A constraint outside the query pool (not searchable) and not executable.
    TypeDescriptor(name="dom.soft", runtime_role="constraint"),
    TypeDescriptor(name="dom.ask", runtime_role="question", capabilities=frozenset({"searchable"})),
    TypeDescriptor(
        name="dom.note",
        runtime_role="assertion",
        capabilities=frozenset({"searchable", "temporal"}),
        search_fields=("extra",),
        defaults={"subject": "User", "confidence": "high", "extra": "deploy tier"},
    ),
    TypeDescriptor(
        name="dom.pref",
        runtime_role="assertion",
        capabilities=frozenset({"searchable", "enforceable", "guardable"}),
        role_field="force",
        role_map={"strong": "guidance", "hard": "constraint"},
        defaults={"status": "candidate", "scope": "calendar"},
    ),
)


def registry() -> TypeRegistry:
    reg = TypeRegistry.standard()
    for descriptor in CUSTOM_TYPES:
        reg.register(descriptor)
    return reg


# Most words come from a handful, so that queries and claims meet often.
_CORE = st.sampled_from(["force", "push", "main", "deploy", "family", "tier"])
_PIECE = st.one_of(_CORE, _CORE, st.sampled_from([*WORDS, *ALIASES, "-", ".", "'s"]))


def text(min_words: int = 0, max_words: int = 6) -> st.SearchStrategy[str]:
    return st.lists(_PIECE, min_size=min_words, max_size=max_words).map(" ".join)


def _targets() -> st.SearchStrategy[Any]:
    target = st.sampled_from(NAMES).flatmap(
        lambda n: st.sampled_from([n, f"fact:{n}", f"boundary:{n}", f"dom.rule:{n}"])
    )
    return st.one_of(target, st.lists(target, max_size=2))


def _guard() -> st.SearchStrategy[Any]:
    phrases = st.lists(st.sampled_from([*WORDS, " Push ", "", "ai generated"]), max_size=2)
    patterns = st.lists(
        st.sampled_from([r"\bmain\b", "fam.ly", "(", "^x", "[0-9]:[0-5]"]), max_size=2
    )
    block = st.fixed_dictionaries(
        {},
        optional={
            "when_any": st.one_of(phrases, st.sampled_from(WORDS)),
            "deny_any": phrases,
            "require_any": phrases,
            "deny_regex": st.one_of(patterns, st.sampled_from([r"\d", "("])),
            "require_regex": patterns,
        },
    )
    return st.one_of(block, st.just("scalar"))


def _field_strategies() -> dict[str, st.SearchStrategy[Any]]:
    return {
        "claim": text(),
        "rule": text(),
        "subject": st.sampled_from(SUBJECTS),
        "scope": st.sampled_from(SCOPES),
        "confidence": st.sampled_from(["high", "low", "High"]),
        "status": st.sampled_from(STATUSES),
        "lifecycle": st.fixed_dictionaries(
            {}, optional={"status": st.sampled_from(STATUSES), "as_of": st.just("2026-01-01")}
        ),
        "supersedes": _targets(),
        "conflicts_with": _targets(),
        "relations": st.fixed_dictionaries({}, optional={"conflicts_with": _targets()}),
        "exceptions": st.one_of(
            st.lists(st.sampled_from(["override", "user_explicit_override", " "]), max_size=2),
            st.just("override"),
        ),
        "tags": st.lists(st.sampled_from(WORDS), max_size=2),
        "guard": _guard(),
        "evidence": st.sampled_from([{"source": "chat"}, {}, "chat"]),
        "force": st.sampled_from(["strong", "hard", "advisory"]),
    }


# Built once: constructing strategies per draw dominates the run time otherwise.
_FIELDS = st.fixed_dictionaries(
    {"claim": text(1, 5)},
    optional={k: v for k, v in _field_strategies().items() if k != "claim"},
)
_ENTITY_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        **_field_strategies(),
        "aliases": st.lists(st.sampled_from(ALIASES), max_size=3),
        "canonical_name": st.sampled_from(["Alex", ""]),
    },
)
_KIND = st.sampled_from(KINDS)
_NAME = st.sampled_from(NAMES)


@st.composite
def workspaces(draw: st.DrawFn) -> Workspace:
    """A workspace of 0-24 declarations spread over 1-4 documents (file labels may repeat)."""
    count = draw(st.integers(0, 24))
    raws = []
    for line in range(count):
        kind = draw(_KIND)
        fields = draw(_ENTITY_FIELDS if kind == "entity" else _FIELDS)
        raws.append((kind, draw(_NAME), fields, line + 1))
    cuts = sorted(draw(st.lists(st.integers(0, count), max_size=3)))
    documents = []
    for n, (start, end) in enumerate(zip([0, *cuts], [*cuts, count], strict=True)):
        label = draw(st.sampled_from([f"f{n}.mem", "same.mem"]))
        module = draw(st.sampled_from([None, "m.one", "m.two"]))
        declarations = [
            RawDeclaration(kind, name, fields, label, line, module)
            for kind, name, fields, line in raws[start:end]
        ]
        documents.append(Document(module, [], declarations, label))
    return Workspace.from_documents(documents, registry())


def type_filters() -> st.SearchStrategy[list[str] | None]:
    return st.one_of(st.none(), st.lists(st.sampled_from([*KINDS, "nope"]), max_size=3))


def query_arguments() -> st.SearchStrategy[dict[str, Any]]:
    """Keyword arguments for `build_evidence_pack` (besides the workspace)."""
    return st.fixed_dictionaries(
        {"query": text(0, 8)},
        optional={
            "types": type_filters(),
            "kinds": type_filters(),
            "subject": st.one_of(st.none(), st.sampled_from(SUBJECTS)),
            "limit": st.integers(-4, 12),
        },
    )


def check_arguments() -> st.SearchStrategy[dict[str, Any]]:
    """Keyword arguments for `check_compliance` (besides the workspace)."""
    return st.fixed_dictionaries(
        {"task": text(0, 5), "candidate": text(0, 6)},
        optional={
            "subject": st.one_of(st.none(), st.sampled_from(SUBJECTS)),
            "scope": st.one_of(st.none(), st.sampled_from(SCOPES)),
            "exceptions": st.lists(
                st.sampled_from(["override", " user_explicit_override ", "", "x"]), max_size=2
            ),
        },
    )
