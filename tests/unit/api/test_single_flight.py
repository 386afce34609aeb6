"""Identical misses computed at once cost one computation: later askers wait for the
first and get its answer, a failed computation leaves them to compute for themselves,
and the table of computations under way is bounded."""

from __future__ import annotations

import anyio
import pytest

from memhubd.service.encoding import AnswerCache, QueryAnswer
from tests.unit.api.test_answer_cache import answer


class Slow:
    """A computation that counts its calls and finishes when told to."""

    def __init__(self, key: str, *, fail: bool = False) -> None:
        self.key = key
        self.fail = fail
        self.calls = 0
        self.release = anyio.Event()

    async def __call__(self) -> QueryAnswer:
        self.calls += 1
        await self.release.wait()
        if self.fail:
            self.fail = False  # only the first computation fails
            raise RuntimeError("engine failed")
        return answer(self.key, 10)


async def _ask(cache: AnswerCache, compute: Slow, results: list, errors: list) -> None:
    try:
        results.append(await cache.computed_once(compute.key, compute))
    except RuntimeError as error:
        errors.append(error)


def test_concurrent_identical_misses_are_computed_once() -> None:
    async def main() -> None:
        # given a cache and one slow computation asked for by three callers at once
        cache, compute = AnswerCache(max_bytes=10_000), Slow("q")
        results: list = []
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(_ask, cache, compute, results, [])
            await anyio.wait_all_tasks_blocked()
            # when it finishes
            compute.release.set()
        # then it ran once, every caller got its answer, and only the first computed it
        assert compute.calls == 1
        assert len({id(found) for found, _shared in results}) == 1
        assert sorted(shared for _found, shared in results) == [False, True, True]
        assert cache.flights() == 0

    anyio.run(main)


def test_waiters_compute_for_themselves_when_the_first_computation_fails() -> None:
    async def main() -> None:
        cache, compute = AnswerCache(max_bytes=10_000), Slow("q", fail=True)
        results: list = []
        errors: list = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_ask, cache, compute, results, errors)
            tg.start_soon(_ask, cache, compute, results, errors)
            await anyio.wait_all_tasks_blocked()
            compute.release.set()

        assert len(errors) == 1 and compute.calls == 2
        assert [shared for _found, shared in results] == [False]
        assert cache.flights() == 0

    anyio.run(main)


def test_different_keys_are_not_shared() -> None:
    async def main() -> None:
        cache = AnswerCache(max_bytes=10_000)
        first, second = Slow("a"), Slow("b")
        results: list = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_ask, cache, first, results, [])
            tg.start_soon(_ask, cache, second, results, [])
            await anyio.wait_all_tasks_blocked()
            first.release.set()
            second.release.set()

        assert first.calls == second.calls == 1
        assert sorted(found.key for found, _shared in results) == ["a", "b"]

    anyio.run(main)


def test_past_the_bound_a_miss_is_computed_by_its_own_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bound = 2

    async def main() -> None:
        monkeypatch.setattr(AnswerCache, "MAX_FLIGHTS", bound)
        cache = AnswerCache(max_bytes=10_000)
        computations = [Slow(f"k{n}") for n in range(bound)]
        same_as_first = computations[0]
        results: list = []
        async with anyio.create_task_group() as tg:
            for compute in computations:
                tg.start_soon(_ask, cache, compute, results, [])
            await anyio.wait_all_tasks_blocked()
            assert cache.flights() == bound
            # the table is full: a third key is computed without an entry
            extra = Slow("extra")
            extra.release.set()
            found, shared = await cache.computed_once("extra", extra)
            assert not shared and extra.calls == 1 and cache.flights() == bound
            # an identical miss still waits for the computation under way
            tg.start_soon(_ask, cache, same_as_first, results, [])
            await anyio.wait_all_tasks_blocked()
            for compute in computations:
                compute.release.set()

        assert same_as_first.calls == 1
        assert cache.flights() == 0

    anyio.run(main)
