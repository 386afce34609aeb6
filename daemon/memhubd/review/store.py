"""ReviewStore: one workspace's proposal queue — propose, list, get, approve, reject, diff.

Files in memdsl's layout under memdsl's lock, so memdsl's own `review` command keeps
working beside it. It never loads a workspace (callers pass a freshly loaded one) and
never imports the daemon's runtime, service or web layers.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from memhubd.lang import ParseError, as_read, parse_text
from memhubd.lang.writer import line_end
from memhubd.model import Declaration, Workspace
from memhubd.review.audit import (
    AuditEntry,
    AuditIndex,
    AuditLog,
    AuditView,
    actor,
    attributed,
    find_entry,
    last_decision,
    propose_details,
)
from memhubd.review.diffs import approval_change, unified_diff
from memhubd.review.durable import (
    ORPHAN_AGE_SECONDS,
    atomic_write,
    ensure_dir,
    exclusive_lock,
    file_mode,
    read_bytes,
    replace_if_unchanged,
    sha256_hex,
    sweep_orphans,
)
from memhubd.review.marking import in_file, mark, superseded_by
from memhubd.review.proposal import (
    PROPOSAL_SUFFIX,
    STATUSES,
    Proposal,
    ProposalFiles,
    approval_block,
    has_marker,
    is_proposal_id,
    marker_stamp,
    new_proposal_id,
    normalize_source,
    now_iso,
    one_line,
    read_proposal,
    render_proposal,
)
from memhubd.review.results import Decision, ProposalDiff, ProposalResult
from memhubd.review.targets import git_operation, resolve_target
from memhubd.review.validation import (
    DEFAULT_MAX_BYTES,
    Issue,
    ValidationResult,
    field_problem,
    generation_problem,
    proposal_id_problem,
    refusal,
    utf8_size,
    validate_source,
    with_file_content,
)

LIST_STATUSES = (*STATUSES, "all")
MAX_ATTEMPTS = 8  # re-reads of a target that keeps changing before giving up
QUIET_POLL_S = 0.02  # how often a target that looks mid-save is looked at again
STALE_HINT = "fix the workspace or re-propose"
CACHED_STAGINGS = 64  # staging directories whose reads are kept, least recently used out


class SourcesChanged(Exception):
    """The workspace's sources changed between the read an approval validates against and
    the moment it held the review lock: nothing was written; read them again.
    `settling`: a source is still being saved (held back), so read them again shortly."""

    def __init__(self, root: str, *, settling: bool = False) -> None:
        super().__init__(root)
        self.settling = settling


class ReviewStore:
    """The review queue of the workspace at `workspace_root`.

    Staging defaults to `<root>/.memdsl` (memdsl's default for a directory path);
    `max_bytes` bounds a proposal's source. Instances hold no mutable state and may
    be shared between threads; every write happens under the `review.lock` file lock.

    Reads keep parsed proposal files and the audit log read so far in the process, per
    staging directory, and check both against the files on every call (`cached=False`
    reads everything again, every call).
    """

    def __init__(
        self,
        workspace_root: str,
        *,
        staging: str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        saves: Any = None,
        cached: bool = True,
    ) -> None:
        """`saves`: the daemon's save policy (`vanish_grace_s`, `settle_s`), which an
        approval applies to its target as serving applies it (default: neither rule)."""
        self.root = os.path.realpath(workspace_root)
        self.staging_dir = os.path.realpath(staging or os.path.join(self.root, ".memdsl"))
        self.proposals_dir = os.path.join(self.staging_dir, "proposals")
        self.audit_path = os.path.join(self.staging_dir, "audit.log")
        self.lock_path = os.path.join(self.staging_dir, "review.lock")
        self.max_bytes = max_bytes
        self.audit = AuditLog(self.audit_path)
        self.vanish_grace_s = float(getattr(saves, "vanish_grace_s", 0.0))
        self.settle_s = float(getattr(saves, "settle_s", 0.0))
        self.cached = cached

    # ---- proposing ------------------------------------------------------

    def validate(
        self, workspace: Workspace, source: str, *, supersedes: str | None = None
    ) -> ValidationResult:
        """memdsl §7.4 validation plus the size limit, the new-id rule and `supersedes`."""
        return validate_source(workspace, source, supersedes=supersedes, max_bytes=self.max_bytes)

    def propose(
        self,
        workspace: Workspace,
        source: str,
        *,
        proposer: str,
        client: str = "",
        reason: str = "",
        generation: int | None = None,
        supersedes: str | None = None,
        max_pending: int | None = None,
    ) -> ProposalResult:
        """Validate `source` and, when it passes, store it as a pending proposal.

        `max_pending`: refuse (`too_many`) when `proposer` already has that many pending
        proposals here; None (memdsl's behaviour) sets no bound."""
        problem = (
            field_problem("proposer", proposer, required=True)
            or field_problem("client", client)
            or field_problem("reason", reason)
            or field_problem("supersedes", supersedes or "")
            or generation_problem(generation)
        )
        if problem is not None:
            return ProposalResult(False, "invalid", errors=(problem,))
        result = self.validate(workspace, source, supersedes=supersedes)
        if not result.ok:
            return ProposalResult(
                False, "invalid", None, result.declaration_id, result.errors, result.warnings
            )
        draft = Proposal(
            id="",
            status="pending",
            created_at="",
            source=normalize_source(source),
            client=one_line(client),
            reason=one_line(reason),
            proposer=one_line(proposer),
            generation=generation,
            supersedes=(supersedes or "").strip(),
        )
        with exclusive_lock(self.lock_path):
            if max_pending is not None:
                # Counted under the lock, so racing proposals cannot pass it together.
                mine = self._pending_of(draft.proposer)
                if mine >= max_pending:
                    problem = Issue(
                        "too_many_pending",
                        f"{draft.proposer} already has {mine} pending proposals in this "
                        f"workspace, the most one identity may have "
                        f"([limits] max_pending_proposals = {max_pending}); "
                        "wait until some are approved or rejected",
                    )
                    return ProposalResult(
                        False, "too_many", None, result.declaration_id, (problem,)
                    )
            proposal = self._store_new(draft)
            self.audit.append("propose", proposal.id, **propose_details(proposal))
        return ProposalResult(
            True, "pending_review", proposal, result.declaration_id, warnings=result.warnings
        )

    def _store_new(self, draft: Proposal) -> Proposal:
        ensure_dir(self.proposals_dir)
        files = self._reader()
        # A killed writer's temp file is removed once a minute old: looking each
        # minute is enough, and spares each proposal a listing of the whole history.
        if not isinstance(files, ProposalFiles) or files.sweep_due(ORPHAN_AGE_SECONDS):
            sweep_orphans(self.proposals_dir)
        while True:
            proposal_id = new_proposal_id()
            path = self._path(proposal_id)
            if not os.path.lexists(path):  # ids carry only 24 random bits per second
                break
        proposal = draft.evolve(id=proposal_id, path=path, created_at=now_iso())
        self._write(proposal)
        return proposal

    # ---- reading --------------------------------------------------------

    def list(self, status: str = "pending") -> list[Proposal]:
        """Proposals with `status` (or "all"), sorted by file name, i.e. by creation time."""
        if status not in LIST_STATUSES:
            raise ValueError(f"status must be one of {', '.join(LIST_STATUSES)}, got {status!r}")
        try:
            names = sorted(os.listdir(self.proposals_dir))
        except (FileNotFoundError, NotADirectoryError):
            return []
        files = self._reader()
        if isinstance(files, ProposalFiles):
            files.keep_only(names)
        # Each proposal's own audit entries: attributing every proposal from the whole
        # log made a list cost proposals × audit lines.
        audited = self._audited()
        found: list[Proposal] = []
        for name in names:
            if not name.endswith(PROPOSAL_SUFFIX):
                continue
            if isinstance(files, ProposalFiles) and status != "all":
                # Filtered on the status kept in memory: a decided proposal left out
                # costs a stat, not a parse.
                in_file = files.status(name)
                if in_file not in (None, "pending", status):
                    continue  # the audit only ever decides a pending proposal
            proposal = self._read(name[: -len(PROPOSAL_SUFFIX)], files)
            if proposal is None:
                # Left out of every list, but never without a word in the log.
                structlog.get_logger("memhubd.review").warning(
                    "proposal file unreadable, not listed",
                    path=os.path.join(self.proposals_dir, name),
                )
                continue
            if proposal.status != "pending" and status not in ("all", proposal.status):
                continue  # the audit only ever decides a pending proposal: no need to look
            own = audited.entries_for(proposal.id)
            proposal = _as_audited(attributed(proposal, own), own)
            if status in ("all", proposal.status):
                found.append(proposal)
        return found

    def _pending_of(self, proposer: str) -> int:
        """How many pending proposals `proposer` has: `list("pending")` counted, except
        that a cached store does not look again at files it read decided (see
        ProposalFiles.undecided), so a proposal costs the pending ones, not the history."""
        files = self._reader()
        if not isinstance(files, ProposalFiles):
            return sum(1 for p in self.list("pending") if p.proposer == proposer)
        try:
            names = sorted(os.listdir(self.proposals_dir))
        except (FileNotFoundError, NotADirectoryError):
            return 0
        files.keep_only(names)
        audited = self._audited()
        mine = 0
        for name in files.undecided(n for n in names if n.endswith(PROPOSAL_SUFFIX)):
            proposal = self._read(name[: -len(PROPOSAL_SUFFIX)], files)
            if proposal is None or proposal.status != "pending":
                continue
            own = audited.entries_for(proposal.id)
            proposal = _as_audited(attributed(proposal, own), own)
            mine += proposal.status == "pending" and proposal.proposer == proposer
        return mine

    def get(self, proposal_id: str) -> Proposal | None:
        """The proposal with this id; None for an unknown, unreadable or malformed id."""
        proposal = self._read(proposal_id)
        if proposal is None:
            return None
        own = self._audited().entries_for(proposal.id)
        return _as_audited(attributed(proposal, own), own)

    def interrupted(self, proposal: Proposal) -> str | None:
        """The target of an approval of `proposal` cut short after writing its block
        (pending, its block in the file it recorded): approving again finishes it."""
        if proposal.status != "pending" or not proposal.merged_into:
            return None
        recorded = self._recorded_target(proposal, None)
        return recorded if isinstance(recorded, str) else None

    def _path(self, proposal_id: str) -> str:
        return os.path.join(self.proposals_dir, proposal_id + PROPOSAL_SUFFIX)

    def _read(self, proposal_id: str, files: _Reader | None = None) -> Proposal | None:
        # Only ids memhub could have minted ever reach the file system: no traversal.
        if not is_proposal_id(proposal_id):
            return None
        proposal = (files or self._reader()).read(proposal_id + PROPOSAL_SUFFIX)
        return proposal if proposal is not None and proposal.id == proposal_id else None

    def _reader(self) -> _Reader:
        """What reads proposal files by name: the process's cache, or the disk every time."""
        if self.cached:
            return kept_reads(self.proposals_dir, self.audit_path)[0]
        return _Uncached(self.proposals_dir)

    def _audited(self) -> AuditView:
        """The audit log as it is now, by proposal."""
        if self.cached:
            return kept_reads(self.proposals_dir, self.audit_path)[1].view()
        return AuditView.of(self.audit.entries())

    def _write(self, proposal: Proposal) -> Proposal:
        atomic_write(proposal.path, render_proposal(proposal).encode("utf-8"))
        return proposal

    # ---- approving ------------------------------------------------------

    def approve(
        self,
        proposal_id: str,
        workspace: Workspace,
        into: str,
        *,
        reviewer: str,
        generation: int | None = None,
        unchanged: Callable[[str], bool] | None = None,
    ) -> Decision:
        """Revalidate against `workspace` and the target as it is now, then append atomically.

        Idempotent: a retry after a crash finishes the interrupted approval (memdsl's
        marker, then the audit, then the proposal) instead of writing twice.
        `unchanged(target)`, asked once the review lock is held: whether the sources other
        than the target (read again under the lock anyway) are still those `workspace`
        was read from; if not, `SourcesChanged` is raised and nothing is written (another
        process approved or saved meanwhile: validate again).
        """
        problem = (
            proposal_id_problem(proposal_id)
            or field_problem("reviewer", reviewer, required=True)
            or generation_problem(generation)
        )
        target = problem or resolve_target(self.root, self.staging_dir, into)
        if isinstance(target, Issue):
            return _refused(proposal_id, target)
        with exclusive_lock(self.lock_path):
            if unchanged is not None and not unchanged(target):
                raise SourcesChanged(self.root)
            return self._approve_locked(
                proposal_id, workspace, target, one_line(reviewer), generation
            )

    def _approve_locked(
        self,
        proposal_id: str,
        workspace: Workspace,
        target: str,
        reviewer: str,
        generation: int | None,
    ) -> Decision:
        opened = self._open(proposal_id, decided_by_audit="reject")
        if isinstance(opened, Decision):
            return opened
        proposal, entries, prior = opened
        recorded = self._recorded_target(proposal, prior)
        if isinstance(recorded, Issue):
            return _refused(proposal_id, recorded)
        approval = _Approval(
            proposal, recorded or target, reviewer, generation, prior, entries, recorded is not None
        )
        stopped = _git_operation(approval, workspace)
        if stopped is not None:
            return Decision(False, "git_operation_in_progress", proposal_id, errors=(stopped,))
        return self._merge(approval, workspace)

    def _merge(self, approval: _Approval, workspace: Workspace) -> Decision:
        decision, proposal = self._merge_tries(approval, workspace)
        if not decision.ok and (proposal.merged_into or proposal.decided_by):
            # Refused, nothing written: a pending proposal names no target nor reviewer
            # of an approval that did not happen (one whose block reached its target is
            # finished, never refused).
            self._write(proposal.evolve(merged_into="", decided_by=""))
        return decision

    def _merge_tries(self, approval: _Approval, workspace: Workspace) -> tuple[Decision, Proposal]:
        proposal, target = approval.proposal, approval.target
        sweep_orphans(os.path.dirname(target))
        for _attempt in range(MAX_ATTEMPTS):
            before = self._quiet_bytes(target, workspace)
            text = _decode(before)
            if text is None:
                unreadable = refusal("target_unreadable", f"{target} is not UTF-8")
                return _stale(proposal, unreadable), proposal
            if approval.recorded and has_marker(text, proposal.id):
                # Finishing an interrupted approval: other files may still need marking.
                # Only one this proposal's approval recorded (memhub's record before it
                # writes, or memdsl's audit): a marker found in a file no approval of it
                # chose was put there by something else, never taken for its block.
                elsewhere, files = self._mark_elsewhere(
                    superseded_by(proposal.source, workspace), target
                )
                done = self._finish(
                    approval,
                    recovered=True,
                    after=sha256_hex(before),
                    marked=elsewhere,
                    written=(target, *files),
                )
                return done, proposal
            result, current = self._revalidate(proposal, workspace, target, text)
            if not result.ok or current is None:
                return _stale(proposal, result), proposal
            # What the proposal supersedes in this file is marked in this same write.
            old = superseded_by(proposal.source, current)
            marked_text, marked = mark(text, in_file(old, target))
            if proposal.merged_into != target or proposal.decided_by != approval.reviewer:
                # Record where this approval writes before writing there, so a retry
                # after a crash (even with another target) finishes this one.
                proposal = self._write(
                    proposal.evolve(merged_into=target, decided_by=approval.reviewer)
                )
            stamp = now_iso()
            block = approval_block(proposal, stamp, line_end(text))
            data = (marked_text + block).encode("utf-8")
            if replace_if_unchanged(target, data, sha256_hex(before), mode=file_mode(target)):
                elsewhere, files = self._mark_elsewhere(
                    [d for d in old if d.id not in marked], target
                )
                done = self._finish(
                    approval,
                    stamp=stamp,
                    before=sha256_hex(before),
                    after=sha256_hex(data),
                    warnings=result.warnings,
                    marked=marked + elsewhere,
                    written=(target, *files),
                )
                return done, proposal
            # Someone changed the target since we read it: start over from their version.
        issue = Issue("target_changed", f"{target} kept changing during the approval; retry")
        return Decision(False, "conflict", proposal.id, errors=(issue,)), proposal

    def _quiet_bytes(self, target: str, workspace: Workspace) -> bytes | None:
        """The target's bytes once it no longer looks like a save in progress.

        An approval replaces the target by a rename: a program still writing the old
        file in place (truncated, then written in steps) would write into a file no
        longer there, and lose its save. So the target is read as serving reads it
        (`memhubd.runtime.saves`): a file that went missing or empty while declarations
        from it are served is waited for up to `vanish_grace_s`, and a file changed less
        than `settle_s` ago is read once it has been still that long.
        """
        deadline = time.monotonic() + self.vanish_grace_s + self.settle_s
        served: set[str] | None = None
        while True:
            try:
                info = os.stat(target)
            except FileNotFoundError:
                info = None
            data = read_bytes(target)
            if time.monotonic() >= deadline:
                return data
            if served is None:
                served = _served_from(workspace, target)
            if not served:
                return data
            if not data:
                time.sleep(QUIET_POLL_S)
                continue
            if info is not None and self.settle_s > 0:
                still = time.time() - max(info.st_mtime, info.st_ctime)
                # Changed bytes that keep every served declaration (the last approval's,
                # say) are used at once, as serving serves them at once.
                if still < self.settle_s and not _keeps(data, served):
                    time.sleep(min(self.settle_s - still, QUIET_POLL_S) + 0.001)
                    continue
            return data

    def _revalidate(
        self, proposal: Proposal, workspace: Workspace, target: str, text: str
    ) -> tuple[ValidationResult, Workspace | None]:
        """The proposal validated against `workspace` with the target as `text`, and that
        workspace (None when the target does not parse)."""
        try:
            current = with_file_content(workspace, target, text)
        except ParseError as exc:
            problem = f"the approval target does not parse: {exc}"
            return refusal("target_parse_error", problem), None
        moved = _module_moved(proposal.source, text)
        if moved is not None:
            return refusal("module_conflict", moved), None
        # The size limit guards what agents submit; a stored proposal is judged on content.
        size = utf8_size(proposal.source) or 0
        result = validate_source(
            current,
            proposal.source,
            supersedes=proposal.supersedes or None,
            max_bytes=max(size, self.max_bytes),
        )
        return result, current

    def _mark_elsewhere(
        self, declarations: list[Declaration], target: str
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Mark superseded declarations that live in files other than the target; the
        ids marked and the files written.

        Each file is its own atomic write, after the target's: a crash in between leaves
        the old declaration unmarked (lint warns, as it did before), never memory lost;
        a retry of the approval marks it then. A file that keeps changing, does not parse
        or lies outside the workspace is left alone.
        """
        marked: list[str] = []
        written: list[str] = []
        files: dict[str, list[Declaration]] = {}
        for declaration in declarations:
            # Labels may be relative to the working directory, not to the root.
            real = os.path.realpath(declaration.file)
            path = resolve_target(self.root, self.staging_dir, real)
            if isinstance(path, str) and path != target:
                files.setdefault(path, []).append(declaration)
        for path, found in sorted(files.items()):
            for _attempt in range(MAX_ATTEMPTS):
                before = read_bytes(path)
                text = _decode(before)
                if not text:
                    break
                changed, ids = mark(text, found)
                if not ids:
                    break
                data = changed.encode("utf-8")
                if replace_if_unchanged(path, data, sha256_hex(before), mode=file_mode(path)):
                    marked.extend(ids)
                    written.append(path)
                    break
        return tuple(marked), tuple(written)

    def _finish(
        self,
        approval: _Approval,
        *,
        recovered: bool = False,
        stamp: str = "",
        before: str | None = None,
        after: str | None = None,
        warnings: tuple[Issue, ...] = (),
        marked: tuple[str, ...] = (),
        written: tuple[str, ...] = (),
    ) -> Decision:
        """Commit an approval whose block is in the target: audit line, then proposal state."""
        proposal, target, prior = approval.proposal, approval.target, approval.prior
        reviewer = approval.reviewer
        if recovered:
            reviewer = actor(prior) or proposal.decided_by or reviewer
            stamp = str((prior or {}).get("ts") or "")
            stamp = stamp or marker_stamp(_decode(read_bytes(target)) or "", proposal.id)
        stamp = stamp or now_iso()
        declaration_id = proposal.declaration
        self.audit.append_once(
            approval.entries,
            "approve",
            proposal.id,
            by=reviewer,
            identity=reviewer,
            into=target,
            declaration=declaration_id,
            forced=False,
            generation=approval.generation,
            target_sha256_before=before,
            target_sha256_after=after,
            marked_superseded=list(marked) or None,
        )
        self._write(
            proposal.evolve(
                status="approved", decided_at=stamp, merged_into=target, decided_by=reviewer
            )
        )
        return Decision(
            True,
            "approved",
            proposal.id,
            declaration_id,
            target,
            reviewer,
            recovered,
            warnings=warnings,
            target_sha256_before=before,
            target_sha256_after=after,
            marked_superseded=marked,
            written=written,
        )

    def _recorded_target(self, proposal: Proposal, prior: AuditEntry | None) -> str | Issue | None:
        """The target an interrupted approval already chose, if any (memdsl §12.34).

        The audit's `into` wins, as in memdsl; otherwise memhub's in-progress record,
        but only when its block really reached that file.
        """
        if prior is not None and prior.get("into"):
            return resolve_target(self.root, self.staging_dir, str(prior["into"]))
        if proposal.merged_into:
            recorded = resolve_target(self.root, self.staging_dir, proposal.merged_into)
            text = _decode(read_bytes(recorded)) if isinstance(recorded, str) else None
            if text is not None and has_marker(text, proposal.id):
                return recorded
        return None

    # ---- rejecting ------------------------------------------------------

    def reject(
        self, proposal_id: str, *, reviewer: str, reason: str = "", generation: int | None = None
    ) -> Decision:
        """Mark a pending proposal rejected; nothing is written to the workspace.

        An approval cut short after writing its block is finished instead (the answer is
        `already_approved`, `recovered`); `generation` is then the one expected to serve it,
        recorded in its audit line as an approval records it."""
        problem = (
            proposal_id_problem(proposal_id)
            or field_problem("reviewer", reviewer, required=True)
            or field_problem("reason", reason)
        )
        if problem is not None:
            return _refused(proposal_id, problem)
        with exclusive_lock(self.lock_path):
            return self._reject_locked(
                proposal_id, one_line(reviewer), one_line(reason), generation
            )

    def _reject_locked(
        self, proposal_id: str, reviewer: str, reason: str, generation: int | None = None
    ) -> Decision:
        opened = self._open(proposal_id, decided_by_audit="approve")
        if isinstance(opened, Decision):
            return opened
        proposal, entries, prior = opened
        recorded = self._recorded_target(proposal, None)
        if isinstance(recorded, str):
            # An approval reached the target and was cut short; its block is memory now.
            approval = _Approval(proposal, recorded, reviewer, generation, None, entries)
            done = self._finish(approval, recovered=True, after=sha256_hex(read_bytes(recorded)))
            return Decision(
                False,
                "already_approved",
                proposal_id,
                done.declaration_id,
                recorded,
                done.decided_by,
                recovered=True,
                written=(recorded,),
            )
        decider = actor(prior) or reviewer
        final_reason = one_line((prior or {}).get("reason") or reason)
        self.audit.append_once(
            entries, "reject", proposal_id, by=decider, identity=decider, reason=final_reason
        )
        stamp = str((prior or {}).get("ts") or "") or now_iso()
        self._write(
            proposal.evolve(
                status="rejected",
                decided_at=stamp,
                reject_reason=final_reason,
                merged_into="",
                decided_by=decider,
            )
        )
        return Decision(True, "rejected", proposal_id, proposal.declaration, decided_by=decider)

    # ---- shared decision helpers ---------------------------------------

    def _open(
        self, proposal_id: str, *, decided_by_audit: str
    ) -> Decision | tuple[Proposal, list[AuditEntry], AuditEntry | None]:
        """The pending proposal, the audit and its last decision; or the answer that ends the call.

        A `decided_by_audit` decision already in the audit (a crash cut it short before
        the proposal was rewritten) is carried into the proposal file (memdsl §12.35).
        """
        proposal = self._read(proposal_id)
        if proposal is None:
            return Decision(False, "not_found", proposal_id)
        if proposal.status != "pending":
            return _already(proposal)
        entries = self._entries_for(proposal)
        prior = last_decision(entries, proposal_id)
        if prior is not None and prior.get("action") == decided_by_audit:
            return _already(self._settle(proposal, prior))
        return proposal, entries, prior

    def _entries_for(self, proposal: Proposal) -> list[AuditEntry]:
        """The proposal's audit entries, after restoring a `propose` line a crash may
        have cost (decisions look up and append this proposal's entries only)."""
        entries = self._audited().entries_for(proposal.id)
        if find_entry(entries, "propose", proposal.id) is None:
            details = propose_details(proposal)
            entries.append(
                self.audit.append(
                    "propose", proposal.id, ts=proposal.created_at, recovered=True, **details
                )
            )
        return entries

    def _settle(self, proposal: Proposal, prior: AuditEntry) -> Proposal:
        """Make the proposal file agree with a decision the audit already holds (§12.35)."""
        return self._write(_decided_as(proposal, prior))

    # ---- diff -----------------------------------------------------------

    def diff(
        self, proposal_id: str, into: str | None = None, workspace: Workspace | None = None
    ) -> ProposalDiff:
        """The unified diff approving makes to `into` (for an approved proposal: made to its target).

        Given the loaded `workspace`, a pending proposal's diff also shows the
        `status: superseded` marks the approval adds to that file.
        """
        problem = proposal_id_problem(proposal_id)
        if problem is not None:
            return ProposalDiff(False, "invalid", str(proposal_id), errors=(problem,))
        proposal = self.get(proposal_id)
        if proposal is None:
            return ProposalDiff(False, "not_found", proposal_id)
        if proposal.status == "rejected":
            return ProposalDiff(False, "already_rejected", proposal_id)
        target = resolve_target(self.root, self.staging_dir, into or proposal.merged_into)
        if isinstance(target, Issue):
            return ProposalDiff(False, "invalid", proposal_id, errors=(target,))
        text = _decode(read_bytes(target))
        if text is None:
            issue = Issue("target_unreadable", f"{target} is not UTF-8")
            return ProposalDiff(False, "invalid", proposal_id, target, errors=(issue,))
        marked = None
        if workspace is not None and proposal.status == "pending":
            try:
                current = with_file_content(workspace, target, text)
            except ParseError:
                current = None
            if current is not None:
                old = in_file(superseded_by(proposal.source, current), target)
                marked = mark(text, old)[0]
        before, after = approval_change(proposal, text, marked)
        label = os.path.relpath(target, self.root)
        return ProposalDiff(True, "ok", proposal_id, target, unified_diff(before, after, label))


_KEPT: OrderedDict[tuple[str, str], tuple[ProposalFiles, AuditIndex]] = OrderedDict()
_KEPT_LOCK = threading.Lock()


def kept_reads(proposals_dir: str, audit_path: str) -> tuple[ProposalFiles, AuditIndex]:
    """What the process keeps of the reads of one staging directory: its parsed proposal
    files and its audit log (for at most CACHED_STAGINGS directories)."""
    key = (proposals_dir, audit_path)
    with _KEPT_LOCK:
        kept = _KEPT.get(key)
        if kept is None:
            kept = _KEPT[key] = (ProposalFiles(proposals_dir), AuditIndex(audit_path))
            while len(_KEPT) > CACHED_STAGINGS:
                _KEPT.popitem(last=False)
        else:
            _KEPT.move_to_end(key)
        return kept


@dataclass(frozen=True, slots=True)
class _Uncached:
    """Proposal files read from disk on every call."""

    directory: str

    def read(self, name: str) -> Proposal | None:
        return read_proposal(os.path.join(self.directory, name))


_Reader = ProposalFiles | _Uncached


@dataclass(frozen=True, slots=True)
class _Approval:
    """The facts one approval carries from its checks to its commit.

    `entries` is the proposal's audit as read under the lock; appends keep it current.
    """

    proposal: Proposal
    target: str
    reviewer: str
    generation: int | None
    prior: AuditEntry | None
    entries: list[AuditEntry]
    # Whether `target` is the one an interrupted approval of the proposal recorded (its
    # block may be there already), rather than the one asked for now.
    recorded: bool = False


def _git_operation(approval: _Approval, workspace: Workspace) -> Issue | None:
    """A git operation stopped half-way in a repository an approval would write in: its
    target's, or that of a file where it marks a declaration superseded."""
    paths = {approval.target}
    paths.update(
        os.path.realpath(d.file) for d in superseded_by(approval.proposal.source, workspace)
    )
    for path in sorted(paths):
        stopped = git_operation(path)
        if stopped is not None:
            return stopped
    return None


def _module_moved(source: str, target_text: str) -> str | None:
    """Why appending `source` would move the target's declarations to another module, or
    None. The last `module` statement of a file names the module of every declaration in
    it, those above it included (memdsl), so a proposal's own `module` line would
    re-home declarations the reviewer may not even be able to read."""
    try:
        proposed = parse_text(source, file="<proposal>")
        if proposed.module is None:
            return None
        target = parse_text(as_read(target_text), file="t")
    except ParseError:
        return None  # reported as such by the validation
    if not target.declarations or target.module == proposed.module:
        return None
    return (
        f"the proposal declares module '{proposed.module}', and appending it would move every "
        f"declaration of the target to it (the target's module is "
        f"{repr(target.module) if target.module else 'none'}): drop the proposal's module "
        "line, or approve it into a file of that module or a new one"
    )


def _decode(data: bytes | None) -> str | None:
    """Target text ("" when absent); None when it is not UTF-8."""
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _already(proposal: Proposal) -> Decision:
    """A decided proposal, reported with what was decided."""
    return Decision(
        False,
        f"already_{proposal.status}",
        proposal.id,
        proposal.declaration,
        proposal.merged_into,
        proposal.decided_by,
    )


def _decided_as(proposal: Proposal, prior: AuditEntry) -> Proposal:
    """`proposal` as the audited decision `prior` left it."""
    decider = actor(prior)
    if prior.get("action") == "reject":
        return proposal.evolve(
            status="rejected",
            decided_at=str(prior.get("ts", "")),
            reject_reason=one_line(prior.get("reason", "")),
            merged_into="",
            decided_by=decider,
        )
    return proposal.evolve(
        status="approved",
        decided_at=str(prior.get("ts", "")),
        merged_into=str(prior.get("into", "")),
        decided_by=decider,
    )


def _as_audited(proposal: Proposal, own: list[AuditEntry]) -> Proposal:
    """A pending proposal whose decision the audit already holds (a crash came between
    the audit line and the proposal file) reads as decided: the audit wins, as the next
    decision would settle it. Nothing is written here."""
    if proposal.status != "pending":
        return proposal
    prior = last_decision(own, proposal.id)
    return proposal if prior is None else _decided_as(proposal, prior)


def _stale(proposal: Proposal, result: ValidationResult) -> Decision:
    return Decision(
        False,
        "stale_or_invalid",
        proposal.id,
        result.declaration_id,
        errors=result.errors,
        warnings=result.warnings,
        hint=STALE_HINT,
    )


def _refused(proposal_id: object, issue: Issue) -> Decision:
    return Decision(False, "invalid", str(proposal_id), errors=(issue,))


def _served_from(workspace: Workspace, target: str) -> set[str]:
    """The ids of the declarations `workspace` holds from the file at `target`."""
    real = os.path.realpath(target)
    labels = {label for label in workspace.files if os.path.realpath(label) == real}
    if not labels:
        return set()
    return {d.id for d in workspace.declarations if d.file in labels}


def _keeps(data: bytes, served: set[str]) -> bool:
    """Whether `data` parses and still declares every id in `served`."""
    try:
        document = parse_text(data.decode("utf-8"), keep_text=False)
    except (ParseError, UnicodeDecodeError):
        return False
    return served <= {raw.id for raw in document.declarations}
