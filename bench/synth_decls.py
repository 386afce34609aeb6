"""Builds the declarations of one synthetic workspace: a realistic mix of standard and `ops.*` types.

Pure data (kinds, names, field dicts); files and modules are laid out by `synth`. Everything a
generated workspace contains must lint without errors under memdsl 0.5.1's rules.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass, field

from synth_text import Text, ZipfSampler

REFERENCE_DATE = datetime.date(2026, 11, 30)

# Share of each type among non-entity declarations; entities are sized separately.
TYPE_MIX = (
    ("fact", 0.20),
    ("ops.bug_pattern", 0.12),
    ("decision", 0.10),
    ("state", 0.08),
    ("preference", 0.08),
    ("ops.practice", 0.08),
    ("boundary", 0.045),
    ("ops.rule", 0.045),
    ("open_issue", 0.04),
    ("principle", 0.03),
    ("goal", 0.03),
    ("lesson", 0.03),
    ("skill", 0.02),
)
ENTITY_SHARE = 0.05
MODULE_SIZE = 50
TOPIC_WORDS = 40
MODULES_PER_TOPIC = 3
CONSTRAINT_TYPES = ("boundary", "ops.rule")
SUPERSEDABLE = ("fact", "decision", "state")
ENTITY_KINDS = ("Service", "Team", "Person", "Project", "Repository", "Component", "Vendor")
SCOPE_FORMS = ("service", "repository", "component", "team")
EXCEPTIONS = ("user_explicit_override", "incident_commander_approval", "legal_signoff")
CLAIM_LEADS = {
    "boundary": ("Never", "Do not", "Always", "Only"),
    "ops.rule": ("Never", "Always", "Every", "No"),
    "ops.practice": ("Prefer", "Use", "Try"),
    "decision": ("We chose", "Adopt", "Move"),
}


@dataclass(frozen=True, slots=True)
class Topic:
    """What one area of the workspace is about; each module is written about one topic."""

    scope: str
    subjects: tuple[str, ...]
    words: tuple[str, ...]


@dataclass(slots=True)
class Guard:
    """A constraint's guard plus sample texts that trip it, used to write realistic checks."""

    fields: dict
    triggers: list[str] = field(default_factory=list)
    deny_samples: list[str] = field(default_factory=list)
    require_samples: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Decl:
    kind: str
    name: str
    fields: dict
    module: str = ""
    guard: Guard | None = None
    topic: Topic | None = None

    @property
    def status(self) -> str:
        lifecycle = self.fields.get("lifecycle")
        if isinstance(lifecycle, dict) and "status" in lifecycle:
            return lifecycle["status"]
        return self.fields.get("status", "active")

    @property
    def claim(self) -> str:
        for key in ("claim", "rule", "decision"):
            if key in self.fields:
                return self.fields[key]
        return ""

    def guard_keys(self) -> list[str]:
        return list(self.guard.fields) if self.guard else []

    def set_status(self, status: str) -> None:
        lifecycle = self.fields.get("lifecycle")
        if isinstance(lifecycle, dict):
            lifecycle["status"] = status
        else:
            self.fields["status"] = status


class DeclFactory:
    """Makes the declarations for one (size, seed); keeps the pools the workloads draw from."""

    def __init__(self, rng: random.Random, size: int, scope_count: int | None = None) -> None:
        self.rng = rng
        self.size = size
        self.text = Text(rng)
        self.scopes = self._scope_pool(scope_count or max(8, size // (MODULE_SIZE * 2)))
        self.entity_names: list[str] = []
        self.aliases: list[str] = []
        self.decls: list[Decl] = []
        self.by_kind: dict[str, list[Decl]] = {}
        self.topics: list[Topic] = []
        self.topic: Topic | None = None
        self._names: set[str] = set()

    # --- pools ----------------------------------------------------------------------------------

    def _scope_pool(self, count: int) -> list[str]:
        scopes: dict[str, None] = {}
        while len(scopes) < count:
            word = self.text.uniform()
            if self.rng.random() < 0.35:
                scopes[word] = None
            else:
                scopes[f'{self.rng.choice(SCOPE_FORMS)}("{word}")'] = None
        return list(scopes)

    def scope(self) -> str:
        if self.topic and self.rng.random() < 0.85:
            return self.topic.scope
        # Zipf over the pool: a few scopes (the busy services) carry much of the memory.
        return self._scope_zipf.draw(self.rng)

    def subject(self) -> str:
        if self.topic and self.rng.random() < 0.6:
            return self.rng.choice(self.topic.subjects)
        return self._subject_zipf.draw(self.rng)

    def enter(self, topic: Topic | None) -> None:
        self.topic = topic
        self.text.topic_words = topic.words if topic else ()

    def unique_name(self, base: str) -> str:
        name, n = base, 1
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        return name

    # --- building -------------------------------------------------------------------------------

    def build(self) -> list[Decl]:
        """All declarations in file order: consecutive runs of MODULE_SIZE share one topic."""
        entity_count = max(10, int(self.size * ENTITY_SHARE))
        entities = iter([self._entity() for _ in range(entity_count)])
        self._subject_zipf = ZipfSampler(self.entity_names)
        self._scope_zipf = ZipfSampler(self.scopes)
        modules = -(-self.size // MODULE_SIZE)
        self.topics = [self._topic() for _ in range(max(3, modules // MODULES_PER_TOPIC))]
        module_topics = [self.rng.choice(self.topics) for _ in range(modules)]
        kinds = self._kind_sequence(self.size - entity_count) + ["entity"] * entity_count
        self.rng.shuffle(kinds)
        global_left = 4 + self.size // 20_000
        for position, kind in enumerate(kinds):
            self.enter(module_topics[position // MODULE_SIZE])
            if kind == "entity":
                decl = next(entities)
            else:
                is_global = kind in CONSTRAINT_TYPES and global_left > 0 and self.rng.random() < 0.2
                global_left -= is_global
                decl = self._declaration(kind, is_global)
                self.by_kind.setdefault(kind, []).append(decl)
            decl.topic = self.topic
            self.decls.append(decl)
        self.enter(None)
        return self.decls

    def _topic(self) -> Topic:
        subjects = tuple(self.rng.sample(self.entity_names, min(3, len(self.entity_names))))
        return Topic(
            self.rng.choice(self.scopes), subjects, tuple(self.text.distinct_words(TOPIC_WORDS))
        )

    def _kind_sequence(self, count: int) -> list[str]:
        total = sum(share for _, share in TYPE_MIX)
        kinds: list[str] = []
        for kind, share in TYPE_MIX:
            kinds.extend([kind] * int(count * share / total))
        kinds.extend(["fact"] * (count - len(kinds)))
        self.rng.shuffle(kinds)
        return kinds

    def _entity(self) -> Decl:
        rng, text = self.rng, self.text
        first, second = text.uniform(), text.uniform()
        kind_word = rng.choice(ENTITY_KINDS)
        name = self.unique_name(f"{kind_word}.{first.capitalize()}{second.capitalize()}")
        aliases = [f"{first} {second}"]
        if rng.random() < 0.5:
            aliases.append(f"{second} {kind_word.lower()}")
        if self.aliases and rng.random() < 0.003:
            aliases.append(rng.choice(self.aliases))  # the odd shared nickname, as in real teams
        fields: dict = {"canonical_name": f"{first} {second}", "aliases": aliases}
        if rng.random() < 0.3:
            fields["tags"] = text.words_(2)
        self.entity_names.append(name)
        self.aliases.extend(aliases)
        return Decl("entity", name, fields)

    def _declaration(self, kind: str, is_global: bool) -> Decl:
        rng, text = self.rng, self.text
        name = self.unique_name(f"{text.uniform()}.{text.uniform()}_{text.uniform()}")
        fields: dict = {}
        if rng.random() < 0.75 or kind == "open_issue":
            fields["subject"] = self.subject()
        lead = rng.choice(CLAIM_LEADS.get(kind, ("",)))
        claim_key = {"boundary": "rule", "decision": "decision"}.get(kind, "claim")
        fields[claim_key] = text.sentence(lead=lead)
        strict = kind.startswith("ops.")
        if is_global:
            fields["scope"] = "global"
        elif strict or kind in CONSTRAINT_TYPES or rng.random() < 0.6:
            fields["scope"] = self.scope()
        decl = Decl(kind, name, fields)
        _TYPE_FIELDS[kind](self, decl)
        self._common(decl, strict)
        return decl

    def _common(self, decl: Decl, strict: bool) -> None:
        rng, text, fields = self.rng, self.text, decl.fields
        if rng.random() < 0.15:
            fields["confidence"] = "high"
        elif rng.random() < 0.2:
            fields["confidence"] = "medium"
        if rng.random() < 0.25:
            fields["tags"] = text.words_(rng.randint(1, 3))
        if rng.random() < 0.05:
            fields["access_policy"] = {
                "readers": ["developer", "coding_agent"],
                "writers": ["maintainer"],
                "export": "internal",
            }
        if decl.kind in SUPERSEDABLE and rng.random() < 0.03:
            self._supersede(decl, strict)
        if rng.random() < 0.08:
            self._relate(decl, strict)
        needs_evidence = decl.kind not in ("open_issue", "goal", "lesson", "skill")
        roll = rng.random()
        if roll < 0.04:
            decl.set_status("candidate")
            needs_evidence = needs_evidence and rng.random() < 0.5
        elif roll < 0.05:
            decl.set_status("archived")
        if needs_evidence or rng.random() < 0.3:
            fields["evidence"] = {
                "source": f"notes/{REFERENCE_DATE.year}/{text.uniform()}.md",
                "quote": text.phrase(3, 8),
            }

    def _supersede(self, decl: Decl, strict: bool) -> None:
        earlier = [d for d in self.by_kind.get(decl.kind, [])[-40:] if d.status == "active"]
        if not earlier:
            return
        target = self.rng.choice(earlier)
        ref = target.name if self.rng.random() < 0.6 else f"{target.kind}:{target.name}"
        self._add_relation(decl, "supersedes", ref, strict)
        if self.rng.random() < 0.9:
            target.set_status("superseded")

    def _relate(self, decl: Decl, strict: bool) -> None:
        pool = self.by_kind.get(self.rng.choice(("fact", "decision", "ops.rule", "boundary")), [])
        if not pool:
            return
        target = self.rng.choice(pool[-200:])
        relation = "conflicts_with" if decl.kind == "decision" and self.rng.random() < 0.2 else None
        relation = relation or self.rng.choice(("supports", "depends_on", "related_to"))
        self._add_relation(decl, relation, target.name, strict)

    @staticmethod
    def _add_relation(decl: Decl, relation: str, target: str, strict: bool) -> None:
        # Strict (JSON schema) types only accept relations inside the universal `relations` block.
        if strict or relation in decl.fields:
            decl.fields.setdefault("relations", {})[relation] = target
        else:
            decl.fields[relation] = target


# --- per-type fields ----------------------------------------------------------------------------


def _state(f: DeclFactory, decl: Decl) -> None:
    rng = f.rng
    age = rng.randint(200, 400) if rng.random() < 0.05 else rng.randint(0, 170)
    lifecycle = {
        "status": "active",
        "as_of": (REFERENCE_DATE - datetime.timedelta(age)).isoformat(),
    }
    if rng.random() < 0.2:
        ahead = rng.randint(-20, 120) if rng.random() < 0.15 else rng.randint(10, 200)
        lifecycle["valid_until"] = (REFERENCE_DATE + datetime.timedelta(ahead)).isoformat()
    decl.fields["lifecycle"] = lifecycle


def _preference(f: DeclFactory, decl: Decl) -> None:
    decl.fields["force"] = "strong" if f.rng.random() < 0.4 else "advisory"


def _open_issue(f: DeclFactory, decl: Decl) -> None:
    decl.fields["next_action"] = f.text.sentence(4, 9, lead="Ask")


def _constraint(f: DeclFactory, decl: Decl) -> None:
    rng = f.rng
    if decl.kind == "boundary" and rng.random() < 0.3:
        decl.fields["force"] = "hard"
    if decl.kind == "ops.rule":
        decl.fields["owner"] = f.rng.choice(f.entity_names)
        if rng.random() < 0.5:
            decl.fields["rationale"] = f.text.sentence(5, 12)
    roll = rng.random()
    if roll < 0.85:
        decl.fields["exceptions"] = rng.sample(EXCEPTIONS, rng.randint(1, 2))
    elif roll < 0.95:
        decl.fields["exceptions"] = []
    if rng.random() < 0.75:
        decl.guard = _guard(f)
        decl.fields["guard"] = decl.guard.fields


def _bug_pattern(f: DeclFactory, decl: Decl) -> None:
    text = f.text
    decl.fields["symptoms"] = [text.phrase(2, 5) for _ in range(f.rng.randint(1, 3))]
    decl.fields["fix"] = text.sentence(5, 12)
    if f.rng.random() < 0.3:
        decl.fields["workaround"] = text.sentence(4, 10)


def _practice(f: DeclFactory, decl: Decl) -> None:
    decl.fields["tool"] = f.text.uniform()
    decl.fields["reason"] = f.text.sentence(5, 12)


def _plain(f: DeclFactory, decl: Decl) -> None:
    return None


_TYPE_FIELDS: dict = {
    "state": _state,
    "preference": _preference,
    "open_issue": _open_issue,
    "boundary": _constraint,
    "ops.rule": _constraint,
    "ops.bug_pattern": _bug_pattern,
    "ops.practice": _practice,
}
for _kind, _ in TYPE_MIX:
    _TYPE_FIELDS.setdefault(_kind, _plain)


# --- guards -------------------------------------------------------------------------------------

# (pattern template, sample template): the sample is text the pattern matches.
REGEX_TEMPLATES = (
    (r"\b{a}\s+{b}\b", "{a} {b}"),
    (r"\b0?[0-9]:[0-5][0-9]\b", "at 09:30"),
    (r"\b{a}-\d+\b", "{a}-42"),
    (r"^\s*{a}\b", "{a}"),
    (r"(?:{a}|{b})\s+(?:now|today)", "{b} today"),
    (r"\b\d{{3,}}\s*{a}\b", "1500 {a}"),
)


def _regex(f: DeclFactory) -> tuple[str, str]:
    pattern, sample = f.rng.choice(REGEX_TEMPLATES)
    a, b = f.text.word(), f.text.word()
    return pattern.format(a=a, b=b), sample.format(a=a, b=b)


def _guard(f: DeclFactory) -> Guard:
    """Every guard field appears; require rules always carry a trigger, as real ones do."""
    rng = f.rng
    guard = Guard(fields={})
    kinds = [
        k
        for k, p in (
            ("deny_any", 0.5),
            ("deny_regex", 0.3),
            ("require_any", 0.2),
            ("require_regex", 0.1),
        )
        if rng.random() < p
    ]
    if not kinds and rng.random() < 0.97:
        kinds = [rng.choice(("deny_any", "deny_any", "deny_regex", "require_any"))]
    if rng.random() < 0.8 or any(k.startswith("require") for k in kinds):
        guard.triggers = [_phrase(f) for _ in range(rng.randint(1, 3))]
        guard.fields["when_any"] = guard.triggers
    for kind in kinds:
        if kind.endswith("_any"):
            phrases = [_phrase(f) for _ in range(rng.randint(1, 3))]
            guard.fields[kind] = phrases
            samples = phrases
        else:
            pairs = [_regex(f) for _ in range(rng.randint(1, 2))]
            guard.fields[kind] = [p for p, _ in pairs] if len(pairs) > 1 else pairs[0][0]
            samples = [s for _, s in pairs]
        target = guard.deny_samples if kind.startswith("deny") else guard.require_samples
        target.extend(samples)
    return guard


def _phrase(f: DeclFactory) -> str:
    if f.rng.random() < 0.7:
        return f.text.word()
    return f"{f.text.word()} {f.text.word()}"
