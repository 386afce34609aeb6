"""Files held through their grace period are put back where a walk lists them: the
batched `_put_back` places every one exactly as putting them back one at a time does,
whatever the listing (directories nested, emptied, listed out of order)."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import pytest

from memhubd.runtime.snapshot import _one_at_a_time, _put_back


@dataclass(frozen=True)
class Listed:
    path: str


def walk(tree: dict, folder: str, rng: random.Random) -> list[str]:
    """A walk's listing: a directory's files by name, then its subdirectories in an
    order of the file system's (random here)."""
    files = sorted(name for name, child in tree.items() if child is None)
    out = [os.path.join(folder, name) for name in files]
    folders = [name for name, child in tree.items() if child is not None]
    rng.shuffle(folders)
    for name in folders:
        out.extend(walk(tree[name], os.path.join(folder, name), rng))
    return out


def tree_of(rng: random.Random, depth: int = 0) -> dict:
    tree: dict = {}
    for _ in range(rng.randint(0, 5)):
        tree[f"f{rng.randint(0, 99):02d}.mem"] = None
    if depth < 3:
        for i in range(rng.randint(0, 3)):
            tree[f"d{i}"] = tree_of(rng, depth + 1)
    return tree


@pytest.mark.parametrize("seed", range(300))
def test_held_files_go_back_where_they_were_listed(seed: int) -> None:
    rng = random.Random(seed)
    listed = [Listed(p) for p in walk(tree_of(rng), "/ws", rng)]
    if rng.random() < 0.5:  # whole directories emptied, as a branch switch does
        gone = {os.path.dirname(f.path) for f in listed if rng.random() < 0.3}
        held = [f for f in listed if os.path.dirname(f.path) in gone]
    else:
        held = [f for f in listed if rng.random() < 0.4]
    kept = set(held)
    files = [f for f in listed if f not in kept]
    order = tuple(listed)
    assert _put_back(files, held, order) == listed
    assert _put_back(files, held, order) == _one_at_a_time(files, held, order)


@pytest.mark.parametrize("seed", range(300))
def test_any_listing_gives_what_one_at_a_time_gives(seed: int) -> None:
    rng = random.Random(seed)
    listed = [Listed(p) for p in walk(tree_of(rng), "/ws", rng)]
    held = [f for f in listed if rng.random() < 0.4]
    kept = set(held)
    files = [f for f in listed if f not in kept]
    order = list(listed)
    if rng.random() < 0.5:
        rng.shuffle(order)  # served before in another order
    if len(files) > 2 and rng.random() < 0.5:
        i, j = rng.sample(range(len(files)), 2)
        files[i], files[j] = files[j], files[i]  # a listing out of a walk's order
    if rng.random() < 0.3:
        rng.shuffle(held)
    expected = _one_at_a_time(files, held, tuple(order))
    assert _put_back(files, held, tuple(order)) == expected
