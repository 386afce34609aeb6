"""Masks of what a set of roles may read equal a drawer-by-drawer check, through adds,
renumbering after a compaction, and more role sets than are kept."""

from __future__ import annotations

import random

import numpy as np

from memhubd.recall.store.readers import MASKS_KEPT, ReaderGroups

ROLES = ("dev", "ops", "lead", "qa", "private:ann", "private:bob")


def brute(readers: dict[int, tuple[str, ...]], roles: frozenset[str], size: int) -> np.ndarray:
    mask = np.ones(size, dtype=bool)
    for at, names in readers.items():
        if at < size and roles.isdisjoint(names):
            mask[at] = False
    return mask


def test_masks_equal_a_check_of_every_drawer() -> None:
    rng = random.Random(7)
    groups, readers, size = ReaderGroups(), {}, 0
    role_sets = [frozenset(rng.sample(ROLES, rng.randint(0, 3))) for _ in range(MASKS_KEPT + 8)]
    for step in range(40):
        for _ in range(rng.randint(1, 30)):
            if rng.random() < 0.4:
                names = tuple(rng.sample(ROLES, rng.randint(0, 2)))
                groups.add(size, names)
                readers[size] = names
            size += 1
        if step % 7 == 6:  # a compaction keeps some positions, renumbered in order
            keep = np.flatnonzero(np.asarray([rng.random() < 0.7 for _ in range(size)]))
            renumber = np.full(size, -1, np.int64)
            renumber[keep] = np.arange(len(keep))
            groups = groups.renumbered(renumber)
            readers = {int(renumber[a]): n for a, n in readers.items() if renumber[a] >= 0}
            size = len(keep)
        for roles in rng.sample(role_sets, 6):
            first = groups.visible(roles, size)
            assert np.array_equal(first, brute(readers, roles, size))
            assert groups.visible(roles, size) is first  # kept until something changes
    assert bool(groups) == bool(readers)


def test_no_readers_named_means_every_position_is_visible() -> None:
    groups = ReaderGroups()
    assert not groups
    assert groups.visible(frozenset({"dev"}), 3).tolist() == [True, True, True]
