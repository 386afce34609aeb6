"""What a daemon remembers of workspaces removed at run time is bounded: the shelves and
the parse cache keep the names (folders) removed last, not every one ever removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhubd.cowork import shelf as cowork_shelf
from memhubd.recall import shelf as recall_shelf
from memhubd.recall.store.base import UnusableStore
from memhubd.runtime import cache as cache_module
from memhubd.sqlite import UnusableDatabase


def test_removed_names_are_remembered_up_to_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall_shelf, "RETIRED_KEPT", 3)
    monkeypatch.setattr(cowork_shelf, "RETIRED_KEPT", 3)
    monkeypatch.setattr(cache_module, "FORGOTTEN_KEPT", 3)
    recall = recall_shelf.RecallShelf(tmp_path / "recall")
    cowork = cowork_shelf.CoworkShelf(tmp_path / "cowork")
    cache = cache_module.ParseCache(tmp_path / "cache")
    names = [f"gone{n}" for n in range(10)]
    for name in names:
        recall.retire(name)
        cowork.retire(name)
        cache.forget(str(tmp_path / name))
    assert len(recall._retired) == len(recall._removals) == 3
    assert len(cowork._retired) == 3 and len(cache._forgotten) == 3
    # the last removed are still refused to a request that began before their removal
    with pytest.raises(UnusableStore):
        recall.store(names[-1])
    with pytest.raises(UnusableDatabase):
        cowork.store(names[-1])
    assert recall.incarnation(names[-1]) == 1
    # a name removed again counts its removals and is remembered as the newest
    recall.retire(names[-3])
    assert recall.incarnation(names[-3]) == 2 and list(recall._retired)[-1] == names[-3]
    recall.close()
    cowork.close()
