"""Recall's HTTP routes read their input as every other route does: integers in a query
string by the one strict rule, a refusal naming the parameter the caller sent, and an
unknown or ungranted workspace answered 404 before any input is read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

TEAM, OTHER = "team-coding", "writing"
AGENT = "read:summary,read:search,write:recall"
SEARCH = f"/v1/workspaces/{TEAM}/recall/search"
WAKE_UP = f"/v1/workspaces/{TEAM}/recall/wake-up"
# Each refused by `int()`-free parsing: underscores, a sign, spaces, non-ASCII digits.
MALFORMED = ["1_0", "+5", " 5", "5 ", "٥", "5.0", ""]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("recall-inputs")
    with start_daemon(root, copy_examples(root / "ws", [TEAM, OTHER])) as live:
        with live.http(live.admin_token) as http:
            answer = http.post(
                f"/v1/workspaces/{TEAM}/recall/ingest",
                json={"content": "the deploy runbook says to drain the queue first"},
            )
            assert answer.status_code == 201, answer.text
        yield live


def token(daemon: LiveDaemon, name: str, scopes: str, **grants: Any) -> str:
    return daemon.tokens.get(name) or daemon.add_token(name, scopes, **grants)


def refused_field(answer: httpx.Response) -> str:
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid"
    return str(error["detail"]["field"])


@pytest.mark.parametrize("value", MALFORMED)
@pytest.mark.parametrize("name", ["limit", "top_k"])
def test_get_search_refuses_a_malformed_integer_by_name(
    daemon: LiveDaemon, name: str, value: str
) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.get(SEARCH, params={"q": "deploy", name: value})
    assert refused_field(answer) == name


@pytest.mark.parametrize("value", MALFORMED)
@pytest.mark.parametrize("name", ["limit", "budget"])
def test_wake_up_refuses_a_malformed_integer_by_name(
    daemon: LiveDaemon, name: str, value: str
) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.get(WAKE_UP, params={name: value})
    assert refused_field(answer) == name


@pytest.mark.parametrize("value", ["0", "101"])
def test_an_out_of_range_top_k_is_refused_as_top_k(daemon: LiveDaemon, value: str) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.get(SEARCH, params={"q": "deploy", "top_k": value})
    assert refused_field(answer) == "top_k"
    assert "'top_k'" in answer.json()["error"]["message"]
    assert "'limit'" not in answer.json()["error"]["message"]


def test_well_formed_integers_still_search_and_wake_up(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token) as http:
        by_limit = http.get(SEARCH, params={"q": "deploy runbook", "limit": "1"})
        by_top_k = http.get(SEARCH, params={"q": "deploy runbook", "limit": "5", "top_k": "1"})
        woken = http.get(WAKE_UP, params={"limit": "1", "budget": "200"})
    assert by_limit.status_code == 200 and len(by_limit.json()["hits"]) == 1
    assert by_top_k.status_code == 200 and len(by_top_k.json()["hits"]) == 1  # top_k wins
    assert woken.status_code == 200 and len(woken.json()["drawers"]) == 1


# Each with input its route refuses (422) once the workspace is known and granted.
BAD_INPUT = [
    ("POST", "recall/ingest", {"json": {"bogus": 1}}),
    ("POST", "recall/search", {"json": {"bogus": 1}}),
    ("GET", "recall/search", {"params": {"q": "deploy", "bogus": "1"}}),
    ("GET", "recall/search", {"params": {"q": "deploy", "since": "soon"}}),
    ("POST", "recall/taxonomy", {"json": {"room": "ops"}}),
    ("POST", "recall/purge", {"json": {"before": "soon"}}),
    ("POST", "recall/reindex", {"json": {"limit": 0}}),
    ("POST", "kg/triples", {"json": {"bogus": 1}}),
    ("POST", "kg/triples/t-1/invalidate", {"json": {"bogus": 1}}),
    ("POST", "fact-check", {"json": {"bogus": 1}}),
]


@pytest.mark.parametrize(("method", "route", "given"), BAD_INPUT)
def test_an_unknown_or_ungranted_workspace_is_404_whatever_the_input(
    daemon: LiveDaemon, method: str, route: str, given: dict[str, Any]
) -> None:
    scoped = token(daemon, "other-only", "all", workspaces=[OTHER])
    with daemon.http(scoped) as http:
        granted = http.request(method, f"/v1/workspaces/{OTHER}/{route}", **given)
        ungranted = http.request(method, f"/v1/workspaces/{TEAM}/{route}", **given)
        unknown = http.request(method, f"/v1/workspaces/no-such-ws/{route}", **given)
    assert granted.status_code == 422, granted.text  # the input is bad indeed
    for answer, name in ((ungranted, TEAM), (unknown, "no-such-ws")):
        assert answer.status_code == 404, answer.text
        error = answer.json()["error"]
        assert error["code"] == "workspace_not_found"
        # The same answer as for a workspace that does not exist: nothing but the name.
        assert error["message"] == f"unknown workspace '{name}'"
        assert error["detail"] == {"workspace": name, "available": [OTHER]}


def test_search_across_named_workspaces_keeps_its_own_grant_check(daemon: LiveDaemon) -> None:
    reader = token(daemon, "team-searcher", "read:search", workspaces=[TEAM])
    with daemon.http(reader) as http:
        own = http.post("/v1/recall/search", json={"query": "deploy", "workspaces": [TEAM]})
        other = http.post("/v1/recall/search", json={"query": "deploy", "workspaces": [OTHER]})
        every = http.post("/v1/recall/search", json={"query": "deploy"})
    assert own.status_code == 200 and own.json()["workspaces"] == [TEAM]
    assert other.status_code == 404 and other.json()["error"]["code"] == "workspace_not_found"
    assert every.status_code == 200 and every.json()["workspaces"] == [TEAM]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"room": "ops", "keywords": ["deploy", "k" * 201]}, "keywords"),
        ({"room": "ops", "keywords": ["deploy"], "display_name": "d" * 201}, "display_name"),
    ],
)
def test_a_taxonomy_keyword_or_label_over_its_bound_is_refused(
    daemon: LiveDaemon, body: dict[str, Any], field: str
) -> None:
    path = f"/v1/workspaces/{TEAM}/recall/taxonomy"
    with daemon.http(token(daemon, "writer", AGENT, workspaces=[TEAM])) as http:
        refused = http.post(path, json=body)
        taken = http.post(
            path, json={"room": "ops", "keywords": ["k" * 200], "display_name": "d" * 200}
        )
        listed = http.get(path).json()
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["detail"]["field"] == field
    assert taken.status_code == 200, taken.text
    assert listed == taken.json()


def test_a_writer_that_may_not_read_the_taxonomy_is_answered_with_its_edit(
    daemon: LiveDaemon,
) -> None:
    path = f"/v1/workspaces/{TEAM}/recall/taxonomy"
    writer = token(daemon, "tax-writer", "write:recall", workspaces=[TEAM])
    with daemon.http(daemon.admin_token) as http:
        assert http.post(path, json={"room": "theirs", "keywords": ["private"]}).status_code == 200
    with daemon.http(writer) as http:
        edited = http.post(path, json={"room": "mine", "keywords": ["mango"], "display_name": "M"})
        listed = http.get(path)
        removed = http.post(path, json={"room": "mine", "remove": True})
    # The edit is done and said so, with what it wrote only; reading the list stays refused
    assert edited.status_code == 200, edited.text
    assert edited.json() == {
        "workspace": TEAM,
        "entries": [{"room": "mine", "display_name": "M", "keywords": ["mango"]}],
    }
    assert listed.status_code == 403
    assert removed.status_code == 200 and removed.json() == {"workspace": TEAM, "entries": []}
    with daemon.http(daemon.admin_token) as http:
        rooms = [e["room"] for e in http.get(path).json()["entries"]]
    assert "mine" not in rooms and "theirs" in rooms


def citing(field: str, length: int) -> dict[str, Any]:
    """An ingest whose file `name` or whose `source` is `length` characters long."""
    content = f"deploy checklist cited by a {field} of {length} characters"
    if field == "name":
        return {"files": [{"name": "n" * length, "content": content}]}
    return {"content": content, "source": "s" * length}


@pytest.mark.parametrize("field", ["name", "source"])
def test_an_ingest_citation_over_4096_characters_is_refused(daemon: LiveDaemon, field: str) -> None:
    # Given a file name or a source long enough to swell every search answer citing it
    path = f"/v1/workspaces/{TEAM}/recall/ingest"
    with daemon.http(token(daemon, "writer", AGENT, workspaces=[TEAM])) as http:
        # When it is ingested, and one at the bound is ingested too
        refused = http.post(path, json=citing(field, 4097))
        taken = http.post(path, json=citing(field, 4096))
    # Then the long one is refused naming its field; the one at the bound is stored
    assert refused_field(refused) == field
    assert taken.status_code == 201, taken.text[:200]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        (SEARCH, [("q", "deploy"), ("max_chars", "abc"), ("max_chars", "5")], "max_chars"),
        (SEARCH, [("q", "deploy"), ("limit", "3"), ("limit", "4")], "limit"),
        (f"/v1/workspaces/{TEAM}/kg/triples", [("offset", "99999"), ("offset", "1")], "offset"),
        (f"/v1/workspaces/{TEAM}/proposals", [("status", "bogus"), ("status", "pending")], "status"),
    ],
    ids=["search-max-chars", "search-limit", "kg-offset", "proposals-status"],
)
def test_a_query_parameter_given_twice_is_refused_not_taken_at_its_last(
    daemon: LiveDaemon, path: str, params: list[tuple[str, str]], field: str
) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.get(path, params=params)
    assert refused_field(answer) == field
    assert "given more than once" in answer.json()["error"]["message"]


def test_the_parameters_that_take_several_values_still_take_them(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token) as http:
        answer = http.get(SEARCH, params=[("q", "deploy"), ("room", "default"), ("room", "x")])
    assert answer.status_code == 200, answer.text
    assert answer.json()["hits"]
