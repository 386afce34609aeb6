"""Role sets that cannot read the same `readers` lists leave out the same declarations:
they share one view, found without a pass over the declarations, and take one of the
views a snapshot keeps, so a team whose tokens differ only by roles no declaration names
(one private role per agent) never has its views pushed out by each other. Memory stays
bounded by views: one dropped goes with every role set sharing it. A role set reading
differently never shares, and each answers as a view made alone."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from memhubd.auth.access import is_readable
from memhubd.index import build_index
from memhubd.model.workspace import Workspace
from memhubd.query import build_evidence_pack
from memhubd.runtime.snapshot import build_snapshot
from memhubd.service import access

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "team-coding"
SECRET_BUG = "teamcode.bug_pattern:payments.sandbox_key_in_logs"
QUERY = "payment sdk sandbox key logs debug ledger retry"


def _snapshot(tmp_path: Path, extra: str = "") -> Any:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root)
    if extra:
        (root / "extra.mem").write_text(extra, encoding="utf-8")
    return build_snapshot("views-by-hidden", str(root), None)


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> list[frozenset[str]]:
    """The passes over every declaration made for a view (one per call)."""
    made: list[Any] = []
    restrict = Workspace.restricted_by_run

    def counted(self: Workspace, *args: Any, **kwargs: Any) -> Any:
        made.append(self)
        return restrict(self, *args, **kwargs)

    monkeypatch.setattr(Workspace, "restricted_by_run", counted)
    return made


def _pack(ws: Any) -> dict[str, Any]:
    build_index(ws)
    return build_evidence_pack(ws, QUERY).as_dict()


def _alone(snapshot: Any, roles: frozenset[str]) -> Any:
    return snapshot.workspace.restricted(lambda d: is_readable(d, roles))


def test_agents_with_private_roles_share_one_view_made_once(tmp_path, passes) -> None:
    # Given a snapshot and more agents than views are kept, each with a private role
    # no declaration names
    snapshot = _snapshot(tmp_path)
    agents = [
        frozenset({"coding_agent", f"agent-{n}"}) for n in range(access.MAX_CUTS_PER_SNAPSHOT + 4)
    ]
    # When each asks for its view, twice in turn
    cuts = [access._cut_of(snapshot, roles) for roles in agents * 2]  # noqa: SLF001
    # Then one pass made the view every agent shares
    assert len(passes) == 1
    first = cuts[0]
    assert first.hidden and all(cut.workspace is first.workspace for cut in cuts)
    # And every agent's cut is kept: the second round found each of them
    assert cuts[len(agents) :] == cuts[: len(agents)]
    # And the shared view answers as one made alone, without the bug they may not read
    alone = _alone(snapshot, agents[-1])
    assert _pack(cuts[-1].workspace) == _pack(alone)
    assert SECRET_BUG not in str(_pack(cuts[-1].workspace))
    whole = snapshot.workspace
    assert cuts[-1].hidden_must_rules(whole) == first.hidden_must_rules(whole)


def test_a_role_set_that_reads_everything_named_needs_no_pass(tmp_path, passes) -> None:
    snapshot = _snapshot(tmp_path)
    everyone = frozenset({"developer", "maintainer", "security", "extra-role"})
    cut = access._cut_of(snapshot, everyone)  # noqa: SLF001
    assert passes == []
    assert cut.workspace is snapshot.workspace and not cut.hidden


def test_a_private_role_that_a_declaration_names_gets_a_view_of_its_own(tmp_path) -> None:
    # Given agents sharing a view, and one whose second role reads the hidden bug
    snapshot = _snapshot(tmp_path)
    agent = access._cut_of(snapshot, frozenset({"coding_agent", "agent-1"}))  # noqa: SLF001
    lead = frozenset({"coding_agent", "maintainer"})
    cut = access._cut_of(snapshot, lead)  # noqa: SLF001
    # Then that one's view is not the agents' and it reads the bug
    assert cut.workspace is not agent.workspace and cut.twin is None
    assert SECRET_BUG in str(_pack(cut.workspace))
    assert _pack(cut.workspace) == _pack(_alone(snapshot, lead))


# One declaration for each of more roles than views are kept: each role set {rN} reads
# a different declaration, so each needs a view of its own.
MANY = "\n".join(
    f'fact only.r{n} {{ claim: "Only r{n} reads this." '
    f'evidence {{ source: "notes" quote: "r{n}" }} access_policy {{ readers: [r{n}] }} }}'
    for n in range(access.MAX_CUTS_PER_SNAPSHOT + 3)
)


def test_views_kept_stay_bounded_and_a_dropped_view_goes_with_its_sharers(tmp_path) -> None:
    # Given more role sets reading differently than views are kept, each with sharers
    snapshot = _snapshot(tmp_path, MANY)
    for n in range(access.MAX_CUTS_PER_SNAPSHOT + 3):
        for private in ("a", "b", "c"):
            cut = access._cut_of(snapshot, frozenset({f"r{n}", f"{private}-{n}"}))  # noqa: SLF001
            # Then each reads its own declaration and no other role's
            claims = {d.claim_text for d in cut.workspace.declarations}
            assert {c for c in claims if c.startswith("Only r")} == {f"Only r{n} reads this."}
    # Then at most MAX_CUTS_PER_SNAPSHOT views are held by the kept cuts
    cuts = access._CUTS[snapshot]  # noqa: SLF001
    views = {id(cut.workspace) for cut in cuts.values() if cut.hidden}
    assert len(views) <= access.MAX_CUTS_PER_SNAPSHOT
    # And every kept cut's view is one of its own role sets' or a kept view's
    principals = {id(cut) for cut in cuts.values() if cut.twin is None}
    assert all(cut.twin is None or id(cut.twin) in principals for cut in cuts.values())
