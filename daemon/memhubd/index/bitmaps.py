"""Sets of declarations as bitmaps (Python ints), so set algebra over postings runs in C.

Ordinal `o` is bit `width - 1 - o`: the highest set bit is the earliest declaration, so
the first members in workspace order come out through `bit_length()` alone, and
big-endian bytes list members in workspace order. Nothing here knows what a bit means.
"""

from __future__ import annotations

from collections.abc import Iterable

# Maps every non-zero byte to 1, so `find(1)` (memchr) skips runs of empty bytes.
_NONZERO = bytes([0] + [1] * 255)
# For each byte value, the offsets (0 = most significant bit) of its set bits.
_BYTE_MEMBERS = tuple(tuple(i for i in range(8) if value & (0x80 >> i)) for value in range(256))


class OrdinalSpace:
    """Converts between ordinals `0..size-1` and bitmaps over them."""

    __slots__ = ("size", "nbytes", "width")

    def __init__(self, size: int) -> None:
        self.size = size
        self.nbytes = (size + 7) // 8
        self.width = self.nbytes * 8

    def bitmap(self, ordinals: Iterable[int]) -> int:
        buffer = bytearray(self.nbytes)
        for o in ordinals:
            buffer[o >> 3] |= 0x80 >> (o & 7)
        return int.from_bytes(buffer, "big")

    def first(self, bits: int, count: int) -> list[int]:
        """Up to `count` members, earliest first (cheap when `count` is small)."""
        out = []
        top = self.width - 1
        while bits and len(out) < count:
            high = bits.bit_length() - 1
            out.append(top - high)
            bits ^= 1 << high
        return out

    def members(self, bits: int) -> list[int]:
        """Every member, earliest first."""
        if not bits:
            return []
        data = bits.to_bytes(self.nbytes, "big")
        find = data.translate(_NONZERO).find
        out: list[int] = []
        position = find(1)
        while position >= 0:
            base = position * 8
            out.extend(base + offset for offset in _BYTE_MEMBERS[data[position]])
            position = find(1, position + 1)
        return out

    def ordered(self, bits: int, count: int | None = None) -> list[int]:
        """Members earliest first, at most `count`; picks the cheaper extraction.

        Peeling costs nothing up front; the byte scan has a fixed cost and is cheaper
        per member, so it wins for many members.
        """
        wanted = bits.bit_count() if count is None else min(count, bits.bit_count())
        if wanted <= _PEEL_LIMIT:
            return self.first(bits, wanted)
        return self.members(bits)[:wanted]


_PEEL_LIMIT = 32
