"""Scores of every pool member at once, as bit-sliced counters over bitmaps.

A member's score is `matched terms + 2 (resolved subject) + 0.25 (high confidence,
only when positive)`. Adding each term's bitmap into binary counter slices scores all
members with a handful of big-int operations, whatever the posting sizes; members then
come out level by level, best first, workspace order within a level.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from memhubd.index.bitmaps import OrdinalSpace


class Ranking:
    """Counter slices for `matched terms + 2 * subject`; `high` adds the 0.25 tie-break.

    Postings may hold declarations outside `universe` (the query pool); `touched`, and
    so everything ranked, is cut to it.
    """

    def __init__(
        self, space: OrdinalSpace, terms: Iterable[int], bonus: int, *, high: int, universe: int
    ) -> None:
        self.space = space
        self.slices: list[int] = []
        for bits in terms:
            self._add(bits, 0)
        self._add(bonus, 1)
        touched = 0
        for bits in self.slices:
            touched |= bits
        self.touched = touched & universe
        self.high = high & self.touched

    def _add(self, bits: int, position: int) -> None:
        """Add 1 (shifted by `position`) to the counter of every member of `bits`."""
        carry = bits
        while carry:
            if position >= len(self.slices):
                self.slices.extend([0] * (position - len(self.slices)))
                self.slices.append(carry)
                return
            current = self.slices[position]
            self.slices[position] = current ^ carry
            carry &= current
            position += 1

    def levels(self, within: int) -> Iterator[tuple[float, int]]:
        """(score, members) for each non-empty score among `within`, best score first."""
        return self._walk(within & self.touched, len(self.slices) - 1, 0)

    def _walk(self, bits: int, slice_no: int, value: int) -> Iterator[tuple[float, int]]:
        if not bits:
            return
        if slice_no < 0:
            high = bits & self.high
            if high:
                yield value + 0.25, high
            if bits ^ high:
                yield float(value), bits ^ high
            return
        ones = bits & self.slices[slice_no]
        yield from self._walk(ones, slice_no - 1, value + (1 << slice_no))
        yield from self._walk(bits ^ ones, slice_no - 1, value)

    def best(self, within: int, count: int) -> list[tuple[int, float]]:
        """The `count` best (ordinal, score) among `within`: score desc, workspace order."""
        out: list[tuple[int, float]] = []
        for score, members in self.levels(within):
            if len(out) >= count:
                break
            out.extend((o, score) for o in self.space.ordered(members, count - len(out)))
        return out
