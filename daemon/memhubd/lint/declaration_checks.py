"""The per-declaration lint checks, in memdsl's emission order (spec §3 table).

Each check reads one declaration (plus the workspace's known names) and appends
diagnostics; none of them sorts, and none looks at other declarations.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Container
from typing import Any

from memhubd.compiled import cached_when_short, re_compile
from memhubd.lint.diagnostics import ERROR, WARNING, Diagnostic
from memhubd.model import Declaration
from memhubd.schema import TypeDescriptor

STALE_STATE_DAYS = 180

GUARD_FIELDS = frozenset({"when_any", "deny_any", "deny_regex", "require_any", "require_regex"})
_GUARD_RULE_FIELDS = ("deny_any", "deny_regex", "require_any", "require_regex")
_GUARD_REGEX_FIELDS = ("deny_regex", "require_regex")
ACCESS_POLICY_FIELDS = frozenset({"readers", "writers", "reviewers", "export"})
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ABSENT: Any = object()


def _emit(
    out: list[Diagnostic],
    decl: Declaration,
    code: str,
    severity: str,
    message: str,
    path: tuple[str, ...] = (),
) -> None:
    """Report at `decl`; `path` names the field at fault, which locates the column."""
    out.append(
        Diagnostic(code, severity, message, decl.file, decl.line, decl.id, where=(decl, path))
    )


# What a subject or relation target may name: any declaration's name or id, or a symbol.
KnownNames = Container[str]


def check_declaration(
    decl: Declaration, known: KnownNames, today: dt.date, out: list[Diagnostic]
) -> None:
    """Append every per-declaration diagnostic of `decl` to `out`, in memdsl's order."""
    descriptor = decl.type_descriptor
    if descriptor is None:
        _emit(
            out,
            decl,
            "unknown_memory_type",
            ERROR,
            f"memory type '{decl.kind}' is not defined by any loaded schema",
        )
    else:
        _check_required_fields(decl, descriptor, out)
        if not descriptor.allow_extra_fields:
            _check_extra_fields(decl, descriptor, out)
    _check_subject(decl, known, out)
    _check_relations(decl, known, out)
    if descriptor is not None:
        _check_evidence_capability(decl, descriptor, out)
        _check_exceptions(decl, descriptor, out)
    if "guard" in decl.fields:
        _check_guard(decl, descriptor, out)
    if descriptor is not None:
        _check_force(decl, descriptor, out)
        if "temporal" in descriptor.capabilities and decl.status == "active":
            _check_staleness(decl, descriptor, today, out)
    _check_access_policy(decl, out)


def _missing_evidence_message(decl: Declaration) -> str:
    return (
        f"active {decl.kind} '{decl.name}' has no evidence block "
        "(use lifecycle.status: candidate for unconfirmed memories)"
    )


def is_present(decl: Declaration, field_name: str) -> bool:
    """memdsl's `_present`: does a required field count as given (defaults included)?"""
    if field_name == "lifecycle":
        return True  # the derived lifecycle always carries a status
    if field_name == "access_policy":
        return bool(decl.access_policy)
    return decl.field(field_name) not in (None, "", [], {})


def _check_required_fields(
    decl: Declaration, descriptor: TypeDescriptor, out: list[Diagnostic]
) -> None:
    for required in descriptor.required_fields:
        if is_present(decl, required):
            continue
        if required != "evidence":
            _emit(
                out,
                decl,
                "missing_required_field",
                ERROR,
                f"memory type '{decl.kind}' requires field '{required}'",
            )
        elif decl.status == "active":
            _emit(out, decl, "missing_evidence", ERROR, _missing_evidence_message(decl))


def _check_extra_fields(
    decl: Declaration, descriptor: TypeDescriptor, out: list[Diagnostic]
) -> None:
    for field_name in sorted(decl.fields.keys() - descriptor.allowed_fields):
        _emit(
            out,
            decl,
            "unknown_type_field",
            ERROR,
            f"memory type '{decl.kind}' does not allow field '{field_name}'",
            (field_name,),
        )


def _check_subject(decl: Declaration, known: KnownNames, out: list[Diagnostic]) -> None:
    subject = decl.subject
    if subject and subject not in known:
        _emit(
            out,
            decl,
            "unresolved_symbol",
            ERROR,
            f"subject '{subject}' is not a declared symbol",
            ("subject",),
        )


def _check_relations(decl: Declaration, known: KnownNames, out: list[Diagnostic]) -> None:
    fields = decl.fields
    for relation, targets in decl.relations().items():
        # Merged targets list the top-level ones first; the rest come from `relations {}`.
        top = fields.get(relation, _ABSENT)
        top_count = 0 if top is _ABSENT else len(top) if isinstance(top, list) else 1
        for index, target in enumerate(targets):
            if target in known or target.split(":", 1)[-1] in known:
                continue
            path = (relation,) if index < top_count else ("relations", relation)
            _emit(
                out,
                decl,
                "unresolved_symbol",
                ERROR,
                f"relation '{relation}' points to unknown declaration '{target}'",
                path,
            )


def _check_evidence_capability(
    decl: Declaration, descriptor: TypeDescriptor, out: list[Diagnostic]
) -> None:
    # Types may ask for evidence through the capability instead of required_fields;
    # unlike the required-field path, an empty `evidence { }` block satisfies it.
    if (
        "requires_evidence" in descriptor.capabilities
        and "evidence" not in descriptor.required_fields
        and decl.status == "active"
        and decl.evidence is None
    ):
        _emit(out, decl, "missing_evidence", ERROR, _missing_evidence_message(decl))


def _check_exceptions(decl: Declaration, descriptor: TypeDescriptor, out: list[Diagnostic]) -> None:
    if "exceptions_recommended" in descriptor.capabilities and "exceptions" not in decl.fields:
        code = descriptor.diagnostic_codes.get(
            "exceptions_recommended", "missing_recommended_exceptions"
        )
        _emit(
            out,
            decl,
            str(code),
            WARNING,
            f"constraint '{decl.id}' declares no exceptions; confirm it is truly "
            "unconditional or add e.g. [user_explicit_override]",
        )


def _check_guard(
    decl: Declaration, descriptor: TypeDescriptor | None, out: list[Diagnostic]
) -> None:
    guard = decl.fields["guard"]
    if descriptor is not None and "guardable" not in descriptor.capabilities:
        _emit(
            out,
            decl,
            "unsupported_type_capability",
            ERROR,
            f"memory type '{decl.kind}' does not support guard",
            ("guard",),
        )
    if not isinstance(guard, dict):
        _emit(
            out,
            decl,
            "invalid_guard",
            ERROR,
            f"memory '{decl.id}' guard must be a nested block",
            ("guard",),
        )
        return
    unknown = sorted(guard.keys() - GUARD_FIELDS)
    if unknown:
        _emit(
            out,
            decl,
            "unknown_guard_field",
            WARNING,
            f"memory '{decl.id}' guard has unknown field(s): {', '.join(unknown)}",
            ("guard", unknown[0]),
        )
    if not any(guard.get(key) for key in _GUARD_RULE_FIELDS):
        _emit(
            out,
            decl,
            "guard_without_rule",
            WARNING,
            f"memory '{decl.id}' guard has no deny or require condition",
            ("guard",),
        )
    for field_name in _GUARD_REGEX_FIELDS:
        raw = guard.get(field_name, [])
        for pattern in raw if isinstance(raw, list) else [raw]:
            error = regex_error(str(pattern))
            if error is not None:
                _emit(
                    out,
                    decl,
                    "invalid_guard_regex",
                    ERROR,
                    f"memory '{decl.id}' {field_name} pattern {pattern!r} is invalid: {error}",
                    ("guard", field_name),
                )


@cached_when_short(maxsize=4096)
def regex_error(pattern: str) -> str | None:
    """Why Python's `re` rejects `pattern` (the text of its `re.error`), or None.

    memdsl crashes on patterns nested too deeply or with absurd repeat counts;
    those are reported like any other invalid pattern instead, so that one hostile
    guard cannot stop a whole workspace from linting.
    """
    try:
        re_compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return str(exc)
    return None


def _check_force(decl: Declaration, descriptor: TypeDescriptor, out: list[Diagnostic]) -> None:
    allowed = descriptor.allowed_forces
    if not allowed:
        return
    force = decl.force
    if force and force not in allowed:
        _emit(
            out,
            decl,
            "type_force_mismatch",
            WARNING,
            f"memory type '{decl.kind}' does not allow force '{force}'; "
            f"allowed: {', '.join(allowed)}",
            ("force",),
        )


def parse_date(value: Any) -> dt.date | None:
    """A `YYYY-MM-DD` string (surrounding whitespace allowed) that is a real date, else None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not _DATE.match(text):
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


def _lifecycle_path(decl: Declaration, key: str) -> tuple[str, ...]:
    nested = decl.fields.get("lifecycle")
    return ("lifecycle", key) if isinstance(nested, dict) and key in nested else (key,)


def _check_staleness(
    decl: Declaration, descriptor: TypeDescriptor, today: dt.date, out: list[Diagnostic]
) -> None:
    lifecycle = decl.lifecycle
    valid_until = parse_date(lifecycle.get("valid_until"))
    as_of = parse_date(lifecycle.get("as_of"))
    code = str(descriptor.diagnostic_codes.get("stale", "stale_memory"))
    if valid_until is not None and valid_until < today:
        _emit(
            out,
            decl,
            code,
            WARNING,
            f"temporal memory '{decl.id}' expired on {valid_until.isoformat()}",
            _lifecycle_path(decl, "valid_until"),
        )
    elif as_of is not None and (today - as_of).days > STALE_STATE_DAYS:
        _emit(
            out,
            decl,
            code,
            WARNING,
            f"temporal memory '{decl.id}' as_of {as_of.isoformat()} is older than "
            f"{STALE_STATE_DAYS} days; re-confirm or supersede it",
            _lifecycle_path(decl, "as_of"),
        )
    # Independent of the branch above: an expired item can be undated too.
    if as_of is None and "as_of" not in lifecycle:
        _emit(out, decl, code, WARNING, f"temporal memory '{decl.id}' has no as_of date")


def _check_access_policy(decl: Declaration, out: list[Diagnostic]) -> None:
    fields = decl.fields
    key = "access_policy" if "access_policy" in fields else "access"
    if key not in fields:
        return
    policy = fields[key]
    if not isinstance(policy, dict):
        _emit(
            out,
            decl,
            "invalid_access_policy",
            ERROR,
            f"memory '{decl.id}' access policy must be a nested block",
            (key,),
        )
        return
    unknown = sorted(policy.keys() - ACCESS_POLICY_FIELDS)
    if unknown:
        _emit(
            out,
            decl,
            "unknown_access_policy_field",
            WARNING,
            f"memory '{decl.id}' access policy has unknown field(s): {', '.join(unknown)}",
            (key, unknown[0]),
        )
