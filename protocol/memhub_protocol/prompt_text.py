"""Which characters of a message a prompt leaves out, for memctl that prints cowork
messages into agents' prompts and for the daemon that refuses a message with nothing
left to read. Shared so that both draw the line in the same place.

A prompt is read by a person and by an agent: nothing may reach it that the agent reads
and the person cannot see. So besides control characters (escape sequences among them)
it leaves out what renders as nothing: format characters (bidirectional overrides that
reorder what a person sees, Unicode tag characters, zero-width spaces) and the other
default-ignorable code points (fillers, the grapheme joiner, variation selectors but the
two that choose an emoji's or a symbol's look), private-use and unassigned code points.
The zero-width joiner and non-joiner and the two presentation selectors stay only where
they act on what a person sees: a selector after an emoji, a joiner inside an emoji
sequence, after a virama, or inside a word of a cursive script (Persian, Arabic …).
Anywhere else each could carry hidden bits, a few per visible character."""

from __future__ import annotations

import unicodedata

# Format characters a prompt keeps (see above).
_KEPT_FORMAT = frozenset("\u200c\u200d")
# Text and emoji presentation: the variation selectors emoji need.
PRESENTATION = frozenset("\ufe0e\ufe0f")
# Unicode's default-ignorable code points (DerivedCoreProperties): what renderers show
# as nothing where they do not support it. Left out but the joiners and presentation
# selectors above.
_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# Code points unassigned in this Python's tables that later Unicode versions fill with
# visible characters people send (emoji, CJK ideographs): kept, so a new emoji is not lost.
_NEWER_VISIBLE = ((0x1F000, 0x1FAFF), (0x20000, 0x3FFFF))


def left_out(ch: str) -> bool:
    """Whether a prompt leaves `ch` out wherever it stands (see the module's text)."""
    if ch in _KEPT_FORMAT or ch in PRESENTATION:
        return False
    code = ord(ch)
    if any(low <= code <= high for low, high in _IGNORABLE):
        return True
    category = unicodedata.category(ch)
    if category == "Cc":
        return ch not in "\n\t"
    if category == "Cf":
        return True
    if category == "Cn":
        return not any(low <= code <= high for low, high in _NEWER_VISIBLE)
    return category in ("Cs", "Co")


# Kept for what they join or how they show it; nothing to read alone.
INVISIBLE_KEPT = _KEPT_FORMAT | PRESENTATION

_ZWJ, _EMOJI_STYLE, _KEYCAP = "\u200d", "\ufe0f", "\u20e3"
# Emoji outside the symbol blocks `_pictographic` takes whole: © ® ‼ ⁉ ℹ ↔ ◻ ◼ ◽ ◾ ⤴ ⤵
# 〰 〽 ㊗ ㊙. With those blocks' symbols they hold every character of Unicode 14's Emoji
# property but the keycap bases and the skin tones, and every Extended_Pictographic one
# (what emoji sequences join) but ♯ and unassigned code points.
_EMOJI_ELSEWHERE = frozenset(
    "\u00a9\u00ae\u203c\u2049\u2139\u2194\u25fb\u25fc\u25fd\u25fe\u2934\u2935"
    "\u3030\u303d\u3297\u3299"
)
# Keycaps are spelt digit (or # or *), the emoji selector and U+20E3.
_KEYCAP_BASES = frozenset("#*0123456789")
_SKIN_TONES = (0x1F3FB, 0x1F3FF)
# Scripts whose letters join their neighbours, where a joiner or non-joiner changes the
# shapes a person sees: Arabic, Syriac, N'Ko, Mandaic, Mongolian, Phags-pa, Manichaean,
# Psalter Pahlavi, Hanifi Rohingya, Sogdian, Old Uyghur, Chorasmian, Adlam.
_CURSIVE = (
    (0x0600, 0x077F),
    (0x07C0, 0x07FF),
    (0x0840, 0x08FF),
    (0x1800, 0x18AF),
    (0xA840, 0xA87F),
    (0x10AC0, 0x10AFF),
    (0x10B80, 0x10BAF),
    (0x10D00, 0x10D3F),
    (0x10F30, 0x10FDF),
    (0x1E900, 0x1E95F),
)
_VIRAMA = 9  # canonical combining class of Indic viramas (and Khmer's coeng …)


def _pictographic(ch: str) -> bool:
    """Whether `ch` is an emoji or a symbol a presentation selector or an emoji
    sequence can use: symbols (So) of the letterlike-to-arrows blocks (U+2100–2BFF) and
    of the emoji blocks from U+1F000 (there unassigned ones too, newer emoji), and
    `_EMOJI_ELSEWHERE`."""
    if ch in _EMOJI_ELSEWHERE:
        return True
    code, category = ord(ch), unicodedata.category(ch)
    if 0x2100 <= code <= 0x2BFF:
        return category == "So"
    return 0x1F000 <= code <= 0x1FAFF and category in ("So", "Cn")


def _cursive(ch: str) -> bool:
    """Whether `ch` is a letter or a mark of a script whose letters join (`_CURSIVE`)."""
    code = ord(ch)
    return unicodedata.category(ch)[0] in "LM" and any(lo <= code <= hi for lo, hi in _CURSIVE)


def _acts(ch: str, before: str, after: str) -> bool:
    """Whether the joiner or presentation selector `ch` changes what a person sees
    between `before` (what is kept of the text before it, "" at the start) and `after`
    (the next character but joiners and selectors, "" at the end). Nowhere else is it
    kept: it would show nothing and carry a choice an agent reads. Where it acts the
    choice remains, at most 5 after an emoji or a symbol, 2 or 3 in a cursive or Indic
    word: up to about 430 hidden bytes in 8 KB of emoji only, none in ordinary text."""
    if (
        ch == _ZWJ
        and after
        and _cursive(after)
        and not (before and (_cursive(before) or before in INVISIBLE_KEPT))
    ):
        return True  # a joined form at a word's start (‍ه), or a medial one alone (‍ه‍)
    if not before:
        return False
    if ch in PRESENTATION:  # ☺︎ ❤️, and keycaps: 1️⃣
        return _pictographic(before) or (
            ch == _EMOJI_STYLE and before in _KEYCAP_BASES and after == _KEYCAP
        )
    if unicodedata.combining(before) == _VIRAMA:  # Indic conjuncts: क्‍ष क्‌ष, chillus
        return True
    if ch == _ZWJ:
        if after and unicodedata.combining(after) == _VIRAMA:  # Bengali র‍্য
            return unicodedata.category(before).startswith("L")
        emoji = _pictographic(before) or before == _EMOJI_STYLE
        emoji = emoji or _SKIN_TONES[0] <= ord(before) <= _SKIN_TONES[1]
        if emoji:  # 👩‍💻 🏳️‍🌈 👍🏽‍…
            return bool(after) and _pictographic(after)
        # A joined form at a word's end (ه‍); between two letters they join anyway.
        return _cursive(before) and not (after and _cursive(after))
    return _cursive(before) and bool(after) and _cursive(after)  # می‌خواهم


# What `left_out` leaves out of ASCII: its control characters but the newline and tab.
_ASCII_LEFT_OUT = dict.fromkeys(
    code for code in (*range(0x20), 0x7F) if chr(code) not in "\n\t"
)


def shown(text: str) -> str:
    """`text` without what a prompt leaves out: `left_out` characters, and the joiners
    and presentation selectors where they do not act (`_acts`)."""
    if text.isascii():
        # No joiner, selector or other invisible but the control characters: every
        # query and check noted for partner peek takes this way, character by character
        # the other costs tens of microseconds.
        return text.translate(_ASCII_LEFT_OUT)
    kept = [ch for ch in text if not left_out(ch)]
    # What follows each is read past other joiners and selectors, which are dropped or
    # kept alone: so the text shown shows the same again (activity keeps what memctl
    # cleans once more).
    follows, following = [""] * len(kept), ""
    for at in range(len(kept) - 1, -1, -1):
        follows[at] = following
        if kept[at] not in INVISIBLE_KEPT:
            following = kept[at]
    out: list[str] = []
    for ch, after in zip(kept, follows, strict=True):
        if ch in INVISIBLE_KEPT and not _acts(ch, out[-1] if out else "", after):
            continue
        out.append(ch)
    return "".join(out)
