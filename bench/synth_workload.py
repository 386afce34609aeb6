"""Query and check workloads drawn from a generated workspace's vocabulary, aliases and guards.

Each item is plain JSON so both engines' processes read the same list. Nothing here is scored:
expected answers come from running the engines, never from the generator.
"""

from __future__ import annotations

import random

from synth_decls import DeclFactory
from synth_text import FUNCTION_WORDS

QUERY_LEADS = ("how do we", "what is the", "why did we", "rules for", "status of")


def _insert(rng: random.Random, sentence: str, phrase: str) -> str:
    words = sentence.rstrip(".").split()
    words.insert(rng.randint(0, len(words)), phrase)
    return " ".join(words) + "."


def make_queries(factory: DeclFactory, rng: random.Random, count: int) -> list[dict]:
    """Queries as people ask them: words from an existing memory, an alias, or loose topic words."""
    text = factory.text.fork(rng)
    searchable = [d for d in factory.decls if d.kind != "entity" and d.claim]
    kinds = sorted({d.kind for d in searchable})
    queries = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.4:
            words = [w.strip(".").lower() for w in rng.choice(searchable).claim.split()]
            words = [w for w in words if w not in FUNCTION_WORDS]
            words = rng.sample(words, min(len(words), rng.randint(2, 4)))
        elif roll < 0.55:
            words = [rng.choice(factory.aliases), *text.words_(rng.randint(1, 2))]
        else:
            text.topic_words = rng.choice(factory.topics).words  # a question about one area
            words = text.words_(rng.randint(2, 5))
        if rng.random() < 0.3:
            words.insert(0, rng.choice(QUERY_LEADS))
        item: dict = {"query": " ".join(words), "types": None, "subject": None, "limit": 8}
        filter_roll = rng.random()
        if filter_roll < 0.1:
            item["types"] = rng.sample(kinds, rng.randint(1, 2))
        elif filter_roll < 0.18:
            item["subject"] = rng.choice(factory.entity_names)
        queries.append(item)
    return queries


def make_checks(factory: DeclFactory, rng: random.Random, count: int) -> list[dict]:
    """Task/candidate pairs; most aim at one guarded constraint, tripping or satisfying it."""
    text = factory.text.fork(rng)
    guarded = [d for d in factory.decls if d.guard is not None and d.status == "active"]
    checks = []
    for _ in range(count):
        decl = rng.choice(guarded) if guarded and rng.random() < 0.7 else None
        topic = decl.topic if decl else rng.choice(factory.topics)
        text.topic_words = topic.words if topic else ()
        task, candidate = text.sentence(3, 7), text.sentence(5, 12)
        item: dict = {
            "task": task,
            "candidate": candidate,
            "subject": None,
            "scope": None,
            "exceptions": [],
        }
        if decl is not None and decl.guard is not None:
            guard = decl.guard
            if guard.triggers:
                task = _insert(rng, task, rng.choice(guard.triggers))
            roll = rng.random()
            if roll < 0.4 and guard.deny_samples:
                candidate = _insert(rng, candidate, rng.choice(guard.deny_samples))
            elif roll < 0.7 and guard.require_samples:
                candidate = _insert(rng, candidate, " ".join(guard.require_samples))
            item["task"], item["candidate"] = task, candidate
            if rng.random() < 0.25:
                item["scope"] = decl.fields.get("scope")
            if rng.random() < 0.1:
                item["subject"] = decl.fields.get("subject")
            if rng.random() < 0.1 and decl.fields.get("exceptions"):
                item["exceptions"] = [decl.fields["exceptions"][0]]
        checks.append(item)
    return checks
