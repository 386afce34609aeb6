"""Which characters of a message a prompt leaves out, for memctl that prints cowork
messages into agents' prompts and for the daemon that refuses a message with nothing
left to read. Shared so that both draw the line in the same place."""

from __future__ import annotations

import unicodedata

# Format characters a prompt keeps: the zero-width non-joiner and joiner, which Persian
# and Indic spelling and emoji sequences (a family, a profession) need. The others
# (bidirectional overrides that reorder what a person sees, invisible tag characters that
# carry text an agent reads and a person does not, zero-width spaces) are left out.
_KEPT_FORMAT = frozenset("\u200c\u200d")


def left_out(ch: str) -> bool:
    """Whether a prompt leaves `ch` out: a control character but a newline and a tab
    (escape sequences among them), or a format character but the two joiners. Letters
    newer than this Python's Unicode tables (a recent emoji) are kept."""
    category = unicodedata.category(ch)
    if category == "Cc":
        return ch not in "\n\t"
    if category == "Cf":
        return ch not in _KEPT_FORMAT
    return category == "Cs"
