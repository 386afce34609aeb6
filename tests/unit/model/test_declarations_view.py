"""A workspace's declarations view with one file's run replaced reads as a view made
from the new runs."""

from __future__ import annotations

from memhubd.model.workspace import Declarations


def test_a_replaced_run_reads_as_a_view_made_from_the_new_runs() -> None:
    # Given a view of three runs (plain values stand in for declarations)
    runs = [("a1", "a2"), ("b1",), ("c1", "c2", "c3")]
    view = Declarations(runs)  # type: ignore[arg-type]

    # When the middle run grows, shrinks back, or stays as long
    for new in (("b1", "b2", "b3"), ("x",), ("y",)):
        replaced = view.replaced(runs[1], new)  # type: ignore[arg-type]
        assert replaced is not None

        # Then it reads as a view made from the new runs, and the old view is unchanged
        fresh = Declarations([runs[0], new, runs[2]])  # type: ignore[arg-type]
        assert list(replaced) == list(fresh) and len(replaced) == len(fresh)
        assert [replaced[n] for n in range(len(fresh))] == list(fresh)
        assert list(view) == ["a1", "a2", "b1", "c1", "c2", "c3"]


def test_a_run_that_is_not_held_or_an_empty_one_is_not_replaced() -> None:
    runs = [("a1",), ("b1",)]
    view = Declarations(runs)  # type: ignore[arg-type]
    assert view.replaced(tuple(["a1"]), ("z",)) is None  # equal, but not the very run
    assert view.replaced(runs[0], ()) is None
