"""A query whose MUST layer alone is over `limits.max_result_bytes` is refused before the
layer and the answer are built, with the same refusal a whole answer over it gets; for
any query and limit, the answer is refused exactly when it is larger than the limit, and
served byte for byte as without a limit otherwise."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memhub_protocol import QueryRequest
from memhubd.auth.identity import local_operator
from memhubd.query import engine
from memhubd.runtime.hub import Hub, WatchSettings
from memhubd.service import encoding, reads
from memhubd.service.encoding import AnswerTooLarge

pytestmark = pytest.mark.anyio

WS = "dense"
WORDS = ["deploy", "nightly", "release", "review", "holiday", "backup", "schema", "token"]


def write_workspace(root: Path) -> None:
    """Rules under two scopes (one with many), facts with long claims under each and
    under a scope without rules, so MUST sections and the other layers both vary."""
    rng = random.Random(7)
    lines = []
    for n in range(40):
        scope = "big" if n < 32 else "small"
        words = " ".join(rng.choices(WORDS, k=6))
        lines.append(
            f"boundary rules.r{n:02d} {{ scope: repository({scope!r}) "
            f'claim: "Rule {n}: {words}, never without sign-off number {n}." }}'.replace("'", '"')
        )
    for n in range(30):
        scope = ("big", "small", "none")[n % 3]
        words = " ".join(rng.choices(WORDS, k=4 + 4 * (n % 5)))
        lines.append(
            f'fact facts.f{n:02d} {{ scope: repository("{scope}") '
            f'claim: "Fact {n}: {words}." evidence {{ source: "notes.md" quote: "{n}" }} }}'
        )
    (root / "rules.mem").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    write_workspace(tmp_path)
    hub = Hub(watch=WatchSettings(enabled=False))
    async with hub.running({WS: str(tmp_path)}):
        yield hub


async def ask(hub: Hub, request: QueryRequest, limit: int | None) -> bytes | AnswerTooLarge:
    # Each call as a first one: no answer or refusal remembered from another limit.
    encoding._CACHES.pop(hub, None)
    try:
        answer, _view = await reads.query(
            hub, local_operator(), WS, request, max_result_bytes=limit
        )
    except AnswerTooLarge as error:
        return error
    return answer.body


def must_section_size(body: bytes) -> int:
    """The length of the inside of the answer's MUST array (no claim here holds the
    markers)."""
    start = body.index(b',"must":[') + len(b',"must":[')
    return body.index(b'],"should":[', start) - start


def random_requests(count: int) -> list[QueryRequest]:
    rng = random.Random(11)
    return [
        QueryRequest(
            " ".join(rng.sample(WORDS, rng.randint(1, 3))),
            limit=rng.choice([1, 3, 8, 20, -2]),
            types=rng.choice([None, ("fact",), ("boundary",)]),
        )
        for _ in range(count)
    ]


@pytest.mark.parametrize("at_once", [encoding._ENCODED_AT_ONCE, 1])
async def test_answers_are_refused_exactly_when_larger_than_the_limit(
    hub: Hub, monkeypatch: pytest.MonkeyPatch, at_once: int
) -> None:
    # (rules met for the first time encoded in steps of `at_once` until past the limit)
    monkeypatch.setattr(encoding, "_ENCODED_AT_ONCE", at_once)
    rng = random.Random(3)
    for request in random_requests(25):
        # given a query's answer without a limit
        body = await ask(hub, request, None)
        assert isinstance(body, bytes)
        size = len(body)
        # when it is asked again with limits around its size and its MUST section's
        must = must_section_size(body)
        for limit in (size - 1, size, size + 1, rng.randint(0, size), must - 1, must):
            found = await ask(hub, request, limit)
            # then it is refused iff larger, as a whole answer's refusal is; else served
            if size > limit:
                assert isinstance(found, AnswerTooLarge), (request.query, limit)
                assert found.size > limit
                assert found.envelope() == AnswerTooLarge(limit, size).envelope()
                if limit < must:  # decided from the MUST section alone: at most its size
                    assert found.size <= must
            else:
                assert found == body, (request.query, limit)


async def test_a_must_layer_over_the_limit_is_refused_before_it_is_built(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a query whose MUST layer (32 rules of scope "big") alone is over the limit
    built: list[int] = []
    real = engine.must_layer

    def counting(*args):  # noqa: ANN002, ANN202
        layer = real(*args)
        built.append(len(layer.declarations))
        return layer

    monkeypatch.setattr(engine, "must_layer", counting)
    request = QueryRequest("deploy nightly release", types=("boundary",))
    whole = await ask(hub, request, None)
    assert isinstance(whole, bytes) and built
    built.clear()
    # when it is asked with a limit under its MUST section
    refused = await ask(hub, request, 2000)
    # then it is refused without building the layer, the size noted being over the limit
    assert isinstance(refused, AnswerTooLarge)
    assert built == []
    assert 2000 < refused.size <= len(whole)
    assert refused.detail == {"limit": 2000}


async def test_a_first_refusal_encodes_rules_only_until_past_the_limit(
    hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a MUST layer of 32 rules, none of them encoded yet, and rules encoded one at
    # a time until the section's known length passes the limit
    from memhubd.query import pack

    monkeypatch.setattr(encoding, "_ENCODED_AT_ONCE", 1)
    encoded: list[str] = []
    real = pack.declaration_json

    def counting(declaration):  # noqa: ANN001, ANN202
        encoded.append(declaration.id)
        return real(declaration)

    monkeypatch.setattr(pack, "declaration_json", counting)
    request = QueryRequest("deploy nightly release", types=("boundary",))
    # when it is asked with a limit a few rules' pieces long
    refused = await ask(hub, request, 1000)
    # then it is refused after encoding only those, with a size over the limit
    assert isinstance(refused, AnswerTooLarge)
    assert refused.size > 1000
    assert 0 < len(encoded) < 10
    # and the whole answer, asked without a limit, is larger than the size noted
    whole = await ask(hub, request, None)
    assert isinstance(whole, bytes) and must_section_size(whole) >= refused.size


async def test_asked_again_an_early_refusal_is_refused_from_the_size_noted(hub: Hub) -> None:
    request = QueryRequest("deploy nightly release", types=("boundary",))
    encoding._CACHES.pop(hub, None)
    for _ in range(2):
        with pytest.raises(AnswerTooLarge) as refused:
            await reads.query(hub, local_operator(), WS, request, max_result_bytes=2000)
        assert refused.value.detail == {"limit": 2000}
    key = reads.query_lookup(hub, local_operator(), WS, request).key
    assert encoding.answer_cache(hub).refused_size(key) == refused.value.size


async def test_after_an_edit_the_early_refusal_counts_the_edited_rules(
    hub: Hub, tmp_path: Path
) -> None:
    # given a refusal decided from a MUST layer's section
    request = QueryRequest("deploy nightly release", types=("boundary",))
    before = await ask(hub, request, None)
    assert isinstance(before, bytes)
    assert isinstance(await ask(hub, request, must_section_size(before) - 1), AnswerTooLarge)
    # when one of its rules gets a longer claim and the workspace is reloaded
    source = tmp_path / "rules.mem"
    source.write_text(
        source.read_text(encoding="utf-8").replace("Rule 5:", "Rule 5, now longer:"),
        encoding="utf-8",
    )
    host = hub.get(WS)
    assert host is not None and await host.reload([str(source)]) is not None
    after = await ask(hub, request, None)
    assert isinstance(after, bytes) and len(after) == len(before) + len(", now longer")
    # then the refusal's size is the new section's, and the new answer fits its own size
    must = must_section_size(after)
    refused = await ask(hub, request, must - 1)
    assert isinstance(refused, AnswerTooLarge) and refused.size == must
    assert await ask(hub, request, len(after)) == after
