"""Sets of declarations as bitmaps (Python ints), so set algebra over postings runs in C.

Ordinal `o` is bit `width - 1 - o`: the highest set bit is the earliest declaration, so
the first members in workspace order come out through `bit_length()` alone, and
big-endian bytes list members in workspace order. Nothing here knows what a bit means.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

# For each byte value, whether each of its bits is set, the most significant first.
BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.bool_)


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
        """Up to `count` members, earliest first (cheap when `count` is small).

        Members are peeled from windows of the highest bits, shifted out as small ints,
        so finding them costs how far into the bitmap they lie, not its whole width per
        member.
        """
        out: list[int] = []
        top = self.width - 1
        end = bits.bit_length()
        window = _WINDOW
        while end > 0 and len(out) < count:
            start = max(0, end - window)
            chunk = (bits >> start) & ((1 << (end - start)) - 1)
            while chunk and len(out) < count:
                high = chunk.bit_length() - 1
                out.append(top - start - high)
                chunk ^= 1 << high
            end = start
            window <<= 1
        return out

    def members(self, bits: int) -> list[int]:
        """Every member, earliest first."""
        if not bits:
            return []
        return self.member_array(bits).tolist()  # type: ignore[no-any-return]

    def member_array(self, bits: int) -> np.ndarray:
        """Every member, earliest first, as an int64 array."""
        if not bits:
            return np.zeros(0, np.int64)
        data = np.frombuffer(bits.to_bytes(self.nbytes, "big"), np.uint8)
        at = np.flatnonzero(data)  # scanning bytes, then the bits of the non-empty ones
        byte, bit = np.nonzero(BYTE_BITS[data[at]])
        return (at[byte] << 3) + bit  # type: ignore[no-any-return]

    def ordered(self, bits: int, count: int | None = None) -> list[int]:
        """Members earliest first, at most `count`; picks the cheaper extraction.

        Peeling costs nothing up front; the byte scan has a fixed cost and is cheaper
        per member, so it wins for many members.
        """
        if count is not None and count <= _PEEL_LIMIT:
            return self.first(bits, count)
        members = self.members(bits)
        return members if count is None else members[:count]


_PEEL_LIMIT = 32
_WINDOW = 256  # bits of the first window `first` peels from; each next one is twice as wide
