"""Words and sentences for the synthetic workspaces, and the `.mem` text writer they go through.

A few thousand words with Zipf-like frequencies, drawn from a seeded generator. Standard library
only, because the same module runs under memhub's and memdsl's interpreters.
"""

from __future__ import annotations

import bisect
import copy
import itertools
import random
import re
from typing import Protocol

# Words an engineering team's memory is written in. The rest of the vocabulary is made of
# pronounceable synthetic words, so the mix looks like prose plus project jargon.
BASE_WORDS = """
account access action agent alert alias api archive audit backup balance batch billing blob
branch budget buffer bug build bundle cache calendar callback canary capacity cart catalog
certificate change channel charge checkout client cluster commit compute config consent
contract cookie copy cost coupon credential cron customer daemon dashboard data database
deadline debug default deploy deprecation design device diff digest disk dns docker domain
draft driver email embargo encryption endpoint environment error estimate event export feature
feed field file filter firewall flag fleet flush font forecast fork format freeze frontend
gateway grant graph guard handler hash header health hook host hotfix image import incident
index infra inbox input install instance integration invoice issue job journal kernel key label
latency layout lease ledger library license limit link lint listener load locale lock log login
mailbox manifest mapping margin marker merge message metric migration mirror mobile model module
monitor mount network node notice notification offline onboarding opening operator order origin
outage owner package page pager parser partner password patch payload payment payroll peer
permission pipeline plan platform plugin policy pool port portal post pricing privacy probe
process profile promotion prompt proposal proxy publish queue quota rate reader rebase receipt
record recovery refund region registry release relay render replica report repository request
resolver resource retention retry review revision role rollback rollout route runbook runtime
sandbox scanner schedule schema scope screen script search secret segment sensor server service
session shard signal signup sitemap snapshot socket source spend sprint stack staging storage
stream subscription summary support survey switch sync table tag target task template tenant
test thread ticket timeout timezone token tool topic trace tracker traffic transfer trial
trigger tunnel upgrade upload usage user vault vendor version video volume voucher wallet
warning webhook widget window worker workflow workspace zone
accept adjust allow approve assign avoid block bump cancel cap check clean close compare
confirm create delete deny disable drain drop enable encrypt escalate expire fetch fix flag
freeze halt hide ignore keep lower merge migrate mute notify pause pin prefer prune purge push
raise rate read rebuild reduce refresh reject remove rename renew repair replay require reset
restart restore resume revert revoke rotate scale schedule send ship shrink sign skip split
squash stage start stop store submit suspend swap tag throttle tune unlock update validate
verify wait warn watch write
annual blocked broken cold critical daily direct early external fast fresh frozen global hard
heavy hidden hot internal late legacy local manual monthly nightly noisy old optional partial
pending primary private public quiet quick raw read_only regional remote safe secondary shared
silent slow soft stable stale strict temporary trusted unsafe urgent verbose weekly
"""

# Function words give claims their shape, weighted roughly as in English prose; most are
# stopwords for the query and compliance tokenizers, a few (only, every, after) are not.
FUNCTION_WORDS = (
    "the the the the the a a a to to to of of of and and and in in for for on with with is is "
    "are be be must should when before after every all only not never than from by as at our "
    "we it each any this that"
).split()

_ONSETS = "b d f g k l m n p r s t v z br dr gr kr pl st tr".split()
_VOWELS = "a e i o u a e o".split()
_CODAS = ["", "", "n", "r", "s", "t", "l", "x", "k"]

# Zipf-Mandelbrot shape: rank k has weight 1 / (k + Q) ** S. The offset flattens the head
# a little, as in real term statistics once stopwords are set aside.
ZIPF_S = 1.05
ZIPF_Q = 12.0


def _synthetic_word(rng: random.Random) -> str:
    syllables = rng.choice((2, 2, 2, 3))
    parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)]
    return "".join(parts) + rng.choice(_CODAS)


def build_words(rng: random.Random, size: int, *, exclude: set[str]) -> list[str]:
    """Return `size` distinct lowercase words in rank order: real words first, jargon after."""
    real = [w for w in dict.fromkeys(BASE_WORDS.split()) if w not in exclude]
    rng.shuffle(real)
    seen = set(real) | exclude
    jargon: list[str] = []
    while len(real) + len(jargon) < size:
        word = _synthetic_word(rng)
        if word not in seen and len(word) >= 4:
            seen.add(word)
            jargon.append(word)
    return (real + jargon)[:size]


class ZipfSampler:
    """Draws items with Zipf-Mandelbrot weights by rank (rank 0 is the most frequent)."""

    __slots__ = ("items", "_cumulative", "_total")

    def __init__(self, items: list[str], s: float = ZIPF_S, q: float = ZIPF_Q) -> None:
        self.items = items
        weights = (1.0 / (rank + 1 + q) ** s for rank in range(len(items)))
        self._cumulative = list(itertools.accumulate(weights))
        self._total = self._cumulative[-1]

    def draw(self, rng: random.Random) -> str:
        index = bisect.bisect_left(self._cumulative, rng.random() * self._total)
        return self.items[min(index, len(self.items) - 1)]


VOCABULARY_SIZE = 3500


class Text:
    """One seeded stream of words and sentences shared by everything a generator writes.

    `topic_words`, when set, is the vocabulary of the module being written: a share of its
    content words come from there, which is what makes memories about one area resemble each
    other (and queries about that area find them).
    """

    topic_share = 0.6

    def __init__(self, rng: random.Random, vocabulary_size: int = VOCABULARY_SIZE) -> None:
        self.rng = rng
        self.words = build_words(rng, vocabulary_size, exclude=set(FUNCTION_WORDS))
        self.zipf = ZipfSampler(self.words)
        self.topic_words: tuple[str, ...] = ()

    def fork(self, rng: random.Random) -> Text:
        """The same vocabulary drawn by another generator (workloads must not shift the workspace)."""
        twin = copy.copy(self)
        twin.rng = rng
        return twin

    def word(self) -> str:
        """A content word: from the current topic, else with Zipf frequency."""
        if self.topic_words and self.rng.random() < self.topic_share:
            return self.rng.choice(self.topic_words)
        return self.zipf.draw(self.rng)

    def uniform(self) -> str:
        """A content word drawn uniformly: for names, where frequency must not collide."""
        return self.rng.choice(self.words)

    def words_(self, count: int) -> list[str]:
        picked: dict[str, None] = {}
        for _ in range(count * 8):  # bounded: a few extra draws always suffice in practice
            picked[self.word()] = None
            if len(picked) == count:
                break
        return list(picked)

    def distinct_words(self, count: int) -> list[str]:
        return self.rng.sample(self.words, min(count, len(self.words)))

    def phrase(self, low: int, high: int, function_share: float = 0.3) -> str:
        rng = self.rng
        parts = [
            rng.choice(FUNCTION_WORDS) if rng.random() < function_share else self.word()
            for _ in range(rng.randint(low, high))
        ]
        return " ".join(parts)

    def sentence(self, low: int = 7, high: int = 18, lead: str = "") -> str:
        body = self.phrase(low, high)
        text = f"{lead} {body}" if lead else body
        return text[0].upper() + text[1:] + "."


# --- .mem writing -------------------------------------------------------------------------------

_ATOM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*")
_CALL = re.compile(r"[a-z_]+\(\"[A-Za-z0-9_. \-]*\"\)")
_KEYWORDS = {"module", "use"}


class Writable(Protocol):
    kind: str
    name: str
    fields: dict


def quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def scalar(value: str) -> str:
    """Bare atom when the language allows it (as people write), quoted string otherwise."""
    if value not in _KEYWORDS and (_ATOM.fullmatch(value) or _CALL.fullmatch(value)):
        return value
    return quote(value)


def _value(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    return scalar(str(value))


def _entries(fields: dict, indent: str) -> list[str]:
    lines: list[str] = []
    for key, value in fields.items():
        if isinstance(value, dict):
            lines.append(f"{indent}{key} {{")
            lines.extend(_entries(value, indent + "  "))
            lines.append(f"{indent}}}")
        else:
            lines.append(f"{indent}{key}: {_value(value)}")
    return lines


def write_declaration(decl: Writable) -> str:
    """Source text of one declaration, ending with a newline."""
    lines = [f"{decl.kind} {decl.name} {{", *_entries(decl.fields, "  "), "}"]
    return "\n".join(lines) + "\n"
