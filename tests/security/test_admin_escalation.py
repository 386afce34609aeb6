"""Admin escalation: a workspace-scoped admin stays inside its grants, and every
admin action leaves an audit line without a secret.

The model: a token only creates, lists and revokes tokens whose scopes,
workspaces and roles are within its own (`*` only from `*`); only a token granted
every workspace adds or removes workspaces; one directory is never served under
two names; `workspaces` in POST /v1/tokens is required and never empty.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCOPED = "writing"  # the scoped admin's only workspace
OTHER = "team-coding"


def scoped_admin(daemon: Any, name: str = "scoped-admin", **grants: Any) -> str:
    secret = daemon.tokens.get(name)
    if secret is None:
        grants.setdefault("workspaces", [SCOPED])
        secret = daemon.add_token(name, "all", **grants)
    return secret


def create(daemon: Any, secret: str, **body: Any) -> Any:
    with daemon.http(secret) as client:
        return client.post("/v1/tokens", json=body)


def audit_entries(daemon: Any) -> list[dict[str, Any]]:
    path = daemon.state_dir / "audit" / "admin.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    error = response.json()["error"]
    assert error["code"] == code and error["message"]
    return error


# -- minting ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grants", "named"),
    [
        ({"workspaces": ["*"]}, "workspaces *"),
        ({"workspaces": [SCOPED, OTHER]}, f"workspaces {OTHER}"),
        ({"workspaces": [SCOPED], "roles": ["*"]}, "roles *"),
        ({"workspaces": [SCOPED], "roles": ["maintainer"]}, "roles maintainer"),
    ],
    ids=["all-workspaces", "another-workspace", "all-roles", "a-role-it-lacks"],
)
def test_scoped_admin_cannot_mint_wider_grants(
    shared_daemon: Any, grants: dict[str, Any], named: str
) -> None:
    secret = scoped_admin(shared_daemon)
    response = create(shared_daemon, secret, name="minted", scopes=["all"], **grants)
    error = assert_error(response, 403, "forbidden")
    assert named in error["message"]
    with shared_daemon.http(shared_daemon.admin_token) as client:
        names = [t["name"] for t in client.get("/v1/tokens").json()["tokens"]]
    assert "minted" not in names


def test_a_token_cannot_grant_scopes_it_lacks(shared_daemon: Any) -> None:
    secret = shared_daemon.add_token("admin-reader", "admin,read:summary")
    response = create(shared_daemon, secret, name="x", scopes=["all"], workspaces=[SCOPED])
    error = assert_error(response, 403, "forbidden")
    assert "review" in error["message"] and "read:summary" not in error["message"]


def test_a_short_lived_admin_cannot_mint_a_longer_lived_token(shared_daemon: Any) -> None:
    secret = shared_daemon.add_token("brief-admin", "all", expires="1h")
    forever = create(
        shared_daemon, secret, name="forever", scopes=["read:summary"], workspaces=["*"]
    )
    assert "lifetime" in assert_error(forever, 403, "forbidden")["message"]
    within = create(
        shared_daemon,
        secret,
        name="briefer",
        scopes=["read:summary"],
        workspaces=["*"],
        expires="30m",
    )
    assert within.status_code == 201, within.text


def test_scoped_admin_mints_tokens_within_its_grants(shared_daemon: Any) -> None:
    secret = scoped_admin(shared_daemon)
    response = create(
        shared_daemon, secret, name="writer-bot", scopes=["read:summary"], workspaces=[SCOPED]
    )
    assert response.status_code == 201, response.text
    minted = response.json()["token"]
    with shared_daemon.http(minted) as client:
        assert client.get(f"/v1/workspaces/{SCOPED}").status_code == 200
        assert client.get(f"/v1/workspaces/{OTHER}").status_code == 404


@pytest.mark.parametrize(
    "workspaces",
    [[], None, "", [""], "missing"],
    ids=["empty", "null", "blank", "blank-item", "missing"],
)
def test_token_without_workspaces_is_a_422_not_a_global_token(
    shared_daemon: Any, workspaces: Any
) -> None:
    body: dict[str, Any] = {"name": "nowhere", "scopes": ["read:summary"]}
    if workspaces != "missing":
        body["workspaces"] = workspaces
    response = create(shared_daemon, shared_daemon.admin_token, **body)
    error = assert_error(response, 422, "invalid")
    assert error["detail"]["field"] == "workspaces"
    with shared_daemon.http(shared_daemon.admin_token) as client:
        names = [t["name"] for t in client.get("/v1/tokens").json()["tokens"]]
    assert "nowhere" not in names


# -- listing and revoking --------------------------------------------------------------------


def test_scoped_admin_cannot_revoke_a_full_admin(shared_daemon: Any) -> None:
    secret = scoped_admin(shared_daemon)
    with shared_daemon.http(secret) as client:
        response = client.delete("/v1/tokens/admin")
    assert_error(response, 404, "not_found")
    with shared_daemon.http(shared_daemon.admin_token) as client:
        assert client.get("/v1/status").status_code == 200


def test_scoped_admin_lists_only_tokens_within_its_grants(shared_daemon: Any) -> None:
    secret = scoped_admin(shared_daemon)
    shared_daemon.add_token("writing-reader", "read:summary", workspaces=[SCOPED])
    shared_daemon.add_token("coding-reader", "read:summary", workspaces=[OTHER])
    with shared_daemon.http(secret) as client:
        names = {t["name"] for t in client.get("/v1/tokens").json()["tokens"]}
    assert "writing-reader" in names and "scoped-admin" in names
    assert not names & {"admin", "coding-reader"}


def test_scoped_admin_revokes_a_token_within_its_grants(shared_daemon: Any) -> None:
    secret = scoped_admin(shared_daemon)
    doomed = shared_daemon.add_token("doomed", "read:summary", workspaces=[SCOPED])
    with shared_daemon.http(secret) as client:
        assert client.delete("/v1/tokens/doomed").json() == {"revoked": "doomed"}
    with shared_daemon.http(doomed) as client:
        assert client.get("/v1/status").status_code == 401


# -- workspaces ------------------------------------------------------------------------------


def test_scoped_admin_cannot_add_a_workspace_or_re_add_another_ones_directory(
    shared_daemon: Any, tmp_path: Path
) -> None:
    secret = scoped_admin(shared_daemon)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with shared_daemon.http(secret) as client:
        stolen = client.post(
            "/v1/workspaces", json={"name": "coding-copy", "path": shared_daemon.workspaces[OTHER]}
        )
        own = client.post("/v1/workspaces", json={"name": "fresh", "path": str(fresh)})
        names = [w["name"] for w in client.get("/v1/workspaces").json()["workspaces"]]
    assert_error(stolen, 403, "forbidden")
    assert_error(own, 403, "forbidden")
    assert names == [SCOPED]
    with shared_daemon.http(shared_daemon.admin_token) as client:
        served = [w["name"] for w in client.get("/v1/workspaces").json()["workspaces"]]
    assert "coding-copy" not in served and "fresh" not in served


def test_no_one_serves_one_directory_under_two_names(shared_daemon: Any) -> None:
    with shared_daemon.http(shared_daemon.admin_token) as client:
        response = client.post(
            "/v1/workspaces", json={"name": "alias", "path": shared_daemon.workspaces[OTHER]}
        )
    error = assert_error(response, 409, "conflict")
    assert error["detail"]["served_as"] == OTHER


def test_scoped_admin_reloads_but_cannot_remove_its_own_workspace(shared_daemon: Any) -> None:
    secret = scoped_admin(shared_daemon)
    with shared_daemon.http(secret) as client:
        assert client.post(f"/v1/workspaces/{SCOPED}/reload").status_code == 200
        assert_error(client.delete(f"/v1/workspaces/{SCOPED}"), 403, "forbidden")
        assert client.get(f"/v1/workspaces/{SCOPED}").status_code == 200


# -- the audit -------------------------------------------------------------------------------


def test_every_admin_action_is_audited_with_its_outcome_and_no_secret(
    live_daemon: Any, tmp_path: Path
) -> None:
    scoped = scoped_admin(live_daemon)
    extra = tmp_path / "extra"
    extra.mkdir()
    with live_daemon.http(live_daemon.admin_token) as admin:
        created = admin.post(
            "/v1/tokens", json={"name": "bot", "scopes": ["read:summary"], "workspaces": ["*"]}
        ).json()["token"]
        admin.get("/v1/tokens")
        admin.post("/v1/workspaces", json={"name": "extra", "path": str(extra)})
        admin.post("/v1/workspaces/extra/reload")
        admin.delete("/v1/workspaces/extra")
        admin.delete("/v1/tokens/bot")
    with live_daemon.http(scoped) as client:
        client.post("/v1/tokens", json={"name": "up", "scopes": ["all"], "workspaces": ["*"]})
        client.delete("/v1/tokens/admin")

    entries = audit_entries(live_daemon)
    seen = [(e["identity"], e["action"], e["outcome"]) for e in entries]
    assert seen == [
        ("admin", "token.create", "ok"),
        ("admin", "token.list", "ok"),
        ("admin", "workspace.add", "ok"),
        ("admin", "workspace.reload", "ok"),
        ("admin", "workspace.remove", "ok"),
        ("admin", "token.revoke", "ok"),
        ("scoped-admin", "token.create", "refused"),
        ("scoped-admin", "token.revoke", "refused"),
    ]
    assert entries[0]["token"]["name"] == "bot" and entries[0]["token"]["workspaces"] == ["*"]
    assert entries[2]["workspace"] == "extra" and entries[2]["path"] == str(extra)
    assert "workspaces *" in entries[6]["reason"]
    assert all(e["via"] == "api" and e["ts"].endswith("Z") for e in entries)
    text = (live_daemon.state_dir / "audit" / "admin.jsonl").read_text()
    for secret in (created, scoped, live_daemon.admin_token):
        assert secret not in text
    assert os.stat(live_daemon.state_dir / "audit" / "admin.jsonl").st_mode & 0o777 == 0o600


# -- memctl ----------------------------------------------------------------------------------


def memctl(daemon: Any, token: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    return subprocess.run(
        [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", token, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_memctl_token_create_prints_the_secret_alone_on_stdout(shared_daemon: Any) -> None:
    secret = scoped_admin(shared_daemon)
    result = memctl(
        shared_daemon, secret, "token", "create", "cli-bot", "--scopes", "read:summary",
        "--workspaces", SCOPED,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    minted = result.stdout.removesuffix("\n")
    assert minted.startswith("mh_") and "\n" not in minted
    assert "created token cli-bot" in result.stderr and minted not in result.stderr
    with shared_daemon.http(minted) as client:
        assert client.get("/v1/status").json()["identity"]["name"] == "cli-bot"


def test_memctl_refuses_an_escalation_with_the_daemons_reason(shared_daemon: Any) -> None:
    secret = scoped_admin(shared_daemon)
    result = memctl(shared_daemon, secret, "token", "create", "wide", "--scopes", "all")
    assert result.returncode != 0 and result.stdout == ""
    assert "workspaces *" in result.stderr
