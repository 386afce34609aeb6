"""Bitmaps of declarations: members come back in workspace order, whatever the extraction."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memhubd.index.bitmaps import OrdinalSpace


@st.composite
def spaces_with_members(draw: st.DrawFn) -> tuple[OrdinalSpace, list[int]]:
    # Wide enough for `first` to peel from several windows.
    size = draw(st.integers(0, 3000))
    members = draw(st.lists(st.integers(0, max(0, size - 1)), max_size=80)) if size else []
    return OrdinalSpace(size), sorted(set(members))


@given(spaces_with_members(), st.integers(0, 100))
def test_every_extraction_returns_members_earliest_first(
    case: tuple[OrdinalSpace, list[int]], count: int
) -> None:
    space, members = case

    bits = space.bitmap(reversed(members))

    assert space.members(bits) == members
    assert space.first(bits, count) == members[:count]
    assert space.ordered(bits) == members
    assert space.ordered(bits, count) == members[:count]


def test_set_algebra_on_bitmaps_is_set_algebra_on_members() -> None:
    space = OrdinalSpace(20)
    a, b = space.bitmap([1, 5, 9, 19]), space.bitmap([5, 7, 19])

    assert space.members(a & b) == [5, 19]
    assert space.members(a | b) == [1, 5, 7, 9, 19]
    assert space.members(a & ~b) == [1, 9]
