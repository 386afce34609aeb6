"""Structured signals of a text, as mempal's AAAK analysis computes them: entity codes,
topics, flags, emotion codes and importance stars (spec mempal §3.9, §6.3).

Pure functions over a string: deterministic, no model and no I/O. The AAAK encoder
(`recall.aaak`) builds its zettel from these; search attaches them to every hit. A
signal is computed on the fly and never stored; the text it came from is not changed.
Chinese text is matched by its trigger words only: without a word segmenter, runs of
CJK ideographs give no topics and no entities.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_TOPICS = 3
UNKNOWN_ENTITY = "UNK"
DEFAULT_FLAG = "CORE"
DEFAULT_EMOTION = "determ"
DEFAULT_TOPIC = "note"  # the encoder's fallback; analysis alone leaves topics empty
FLAGS = ("DECISION", "ORIGIN", "CORE", "PIVOT", "TECHNICAL", "SENSITIVE")

STOP_WORDS = frozenset(
    ("the", "and", "for", "with", "over", "based", "this", "that", "was", "use", "why")
)

# Ordered: a flag is added at its first trigger found, and flags keep this order.
FLAG_TRIGGERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "DECISION",
        ("decid", "chose", "switch", "migrat", "replace", "recommend", "because")
        + ("决定", "选择", "切换", "迁移", "替换", "推荐", "因为"),
    ),
    (
        "ORIGIN",
        ("found", "create", "start", "born", "launch", "first time")
        + ("创建", "创立", "开始", "第一次"),
    ),
    (
        "CORE",
        ("core", "fundamental", "essential", "principle", "belief", "always")
        + ("核心", "基本", "原则", "信念"),
    ),
    (
        "PIVOT",
        ("turning point", "changed everything", "realized", "breakthrough", "epiphany")
        + ("转折", "突破", "顿悟"),
    ),
    (
        "TECHNICAL",
        ("api", "database", "architecture", "deploy", "infrastructure", "framework", "server")
        + ("config", "auth", "接口", "数据库", "架构", "部署", "框架", "服务器", "配置", "认证"),
    ),
    (
        "SENSITIVE",
        ("token", "password", "secret", "credential", "private", "sensitive", "pii")
        + ("密码", "密钥", "凭证", "隐私"),
    ),
)

# Ordered as mempal's table; several triggers may share one code.
EMOTION_TRIGGERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("determ", ("decided", "determined", "决定", "确定")),
    ("convict", ("prefer", "confident", "坚信")),
    ("anx", ("worried", "anxious", "concern", "担心", "焦虑")),
    ("excite", ("excited", "兴奋", "激动")),
    ("frust", ("frustrated", "沮丧")),
    ("confuse", ("confused", "困惑")),
    ("love", ("love", "喜欢")),
    ("rage", ("hate", "愤怒")),
    ("hope", ("hope", "希望")),
    ("fear", ("fear", "害怕")),
    ("trust", ("trust", "信任")),
    ("joy", ("happy", "joy", "开心", "高兴")),
    ("grief", ("sad", "grief", "disappoint", "难过", "失望")),
    ("surpr", ("surprised", "惊讶")),
    ("grat", ("grateful", "感谢")),
    ("curious", ("curious", "好奇")),
    ("wonder", ("wonder",)),
    ("relief", ("relieved", "轻松", "放心")),
    ("satis", ("satisf", "满意")),
    ("vul", ("vulnerable",)),
    ("tender", ("tender",)),
    ("raw", ("honest", "坦白")),
    ("doubt", ("doubt", "怀疑")),
    ("exhaust", ("exhaust", "疲惫")),
    ("warmth", ("warm", "温暖")),
    ("humor", ("humor", "funny", "幽默")),
    ("peace", ("peace", "平静")),
    ("despair", ("despair", "绝望")),
    ("passion", ("passion", "热情")),
)
EMOTIONS = tuple(dict.fromkeys(code for code, _ in EMOTION_TRIGGERS))

_CJK = "\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff"
_SEGMENT = re.compile(rf"[A-Za-z0-9]+|[{_CJK}]+")
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]+")
_CODE = re.compile(r"[A-Z]{3}")


@dataclass(frozen=True, slots=True)
class Signals:
    """What analysis found in one text. `topics_total` counts topics before the cut."""

    entities: tuple[str, ...]
    topics: tuple[str, ...]
    flags: tuple[str, ...]
    emotions: tuple[str, ...]
    importance_stars: int
    topics_total: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The five fields search hits carry (mempal's P7 names)."""
        return {
            "entities": list(self.entities),
            "topics": list(self.topics),
            "flags": list(self.flags),
            "emotions": list(self.emotions),
            "importance_stars": self.importance_stars,
        }


def normalize(text: str) -> str:
    """Whitespace runs collapsed to one space, `"` turned into `'`, ends trimmed."""
    return " ".join(text.split()).replace('"', "'")


def segments(text: str) -> list[str]:
    """Maximal runs of ASCII letters and digits, or of CJK ideographs."""
    return _SEGMENT.findall(text)


def _is_ascii(segment: str) -> bool:
    return segment.isascii()


def topics_of(text: str) -> tuple[list[str], int]:
    """Up to MAX_TOPICS distinct lower-cased words (stop words dropped), in order of
    appearance, and how many distinct ones there were."""
    found = dict.fromkeys(
        word
        for word in (s.lower() for s in segments(text) if _is_ascii(s))
        if word not in STOP_WORDS
    )
    words = list(found)
    return words[:MAX_TOPICS], len(words)


def hash_code(name: str) -> str:
    """mempal's code for a name with fewer than three ASCII letters: a 64-bit
    `h * 31 + byte` fold over its UTF-8 bytes, five bits per letter."""
    value = 0
    for byte in name.encode("utf-8"):
        value = (value * 31 + byte) & 0xFFFFFFFFFFFFFFFF
    return "".join(chr(ord("A") + (((value >> (5 * i)) & 31) % 26)) for i in range(3))


def entity_code(name: str) -> str:
    """The first three ASCII letters of `name`, upper-cased, else its hash code."""
    letters = [c for c in name if c.isascii() and c.isalpha()]
    return "".join(letters[:3]).upper() if len(letters) >= 3 else hash_code(name)


def check_aliases(aliases: Mapping[str, str] | None) -> dict[str, str]:
    """`aliases` (name -> code) after checking every code is three uppercase letters."""
    out: dict[str, str] = {}
    for name, code in (aliases or {}).items():
        if not name or not _CODE.fullmatch(code):
            raise ValueError(f"alias {name!r} -> {code!r}: a code is three letters A-Z")
        out[name] = code
    return out


def entities_of(text: str, aliases: Mapping[str, str] | None = None) -> list[str]:
    """Entity codes: alias names found in the text first, then capitalised words of
    two or more characters; de-duplicated by code, `["UNK"]` when there are none."""
    codes = [code for name, code in check_aliases(aliases).items() if name in text]
    for segment in segments(text):
        if _is_ascii(segment) and len(segment) >= 2 and segment[0].isupper():
            codes.append(entity_code(segment))
    return list(dict.fromkeys(codes)) or [UNKNOWN_ENTITY]


def flags_of(text: str) -> list[str]:
    lowered = text.lower()
    found = {flag for flag, words in FLAG_TRIGGERS if any(w in lowered for w in words)}
    return [flag for flag in FLAGS if flag in found] or [DEFAULT_FLAG]


def emotions_of(text: str) -> list[str]:
    lowered = text.lower()
    found = [code for code, words in EMOTION_TRIGGERS if any(w in lowered for w in words)]
    return list(dict.fromkeys(found)) or [DEFAULT_EMOTION]


def stars_for(flags: list[str] | tuple[str, ...]) -> int:
    """4 for a decision or a pivot, 3 for technical matter, 2 otherwise."""
    if "DECISION" in flags or "PIVOT" in flags:
        return 4
    return 3 if "TECHNICAL" in flags else 2


def analyze(text: str, aliases: Mapping[str, str] | None = None) -> Signals:
    """Every signal of `text` (normalised first); `text` itself is left as it is."""
    plain = normalize(text)
    topics, total = topics_of(plain)
    flags = flags_of(plain)
    return Signals(
        entities=tuple(entities_of(plain, aliases)),
        topics=tuple(topics),
        flags=tuple(flags),
        emotions=tuple(emotions_of(plain)),
        importance_stars=stars_for(flags),
        topics_total=total,
    )


def replace_codes(text: str, names: Mapping[str, str]) -> str:
    """Each ASCII-alphanumeric token of `text` equal to a code in `names` (code -> name)
    becomes that name; everything else is kept."""
    if not names:
        return text
    return _ASCII_ALNUM.sub(lambda m: names.get(m.group(0), m.group(0)), text)
