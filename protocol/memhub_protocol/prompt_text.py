"""Which characters of a message a prompt leaves out, for memctl that prints cowork
messages into agents' prompts and for the daemon that refuses a message with nothing
left to read. Shared so that both draw the line in the same place.

A prompt is read by a person and by an agent: nothing may reach it that the agent reads
and the person cannot see. So besides control characters (escape sequences among them)
it leaves out what renders as nothing: format characters (bidirectional overrides that
reorder what a person sees, Unicode tag characters, zero-width spaces) and the other
default-ignorable code points (fillers, the grapheme joiner, variation selectors but the
two that choose an emoji's or a symbol's look), private-use and unassigned code points.
The zero-width joiner and non-joiner stay: Persian and Indic spelling and emoji sequences
need them. Of those four, a character is followed by one selector then one joiner at
most: longer strings of them, alternated or not, could carry hidden bytes."""

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


def _kept_after(ch: str, before: str) -> bool:
    """Whether the joiner or presentation selector `ch` is kept after `before` ("" at
    the start): a selector right after a character, a joiner right after a character
    or after such a selector (how emoji sequences are spelt: 🏳️‍🌈 is a flag, VS16, ZWJ
    and a rainbow). Any longer run of them could carry bytes, two bits a character."""
    if ch in PRESENTATION:
        return before != "" and before not in INVISIBLE_KEPT
    return before != "" and before not in _KEPT_FORMAT


def shown(text: str) -> str:
    """`text` without what a prompt leaves out: `left_out` characters, and of the joiners
    and presentation selectors after a character, all but one selector then one joiner."""
    out: list[str] = []
    for ch in text:
        if left_out(ch):
            continue
        if ch in INVISIBLE_KEPT and not _kept_after(ch, out[-1] if out else ""):
            continue
        out.append(ch)
    return "".join(out)
