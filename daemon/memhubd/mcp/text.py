"""The words the MCP door speaks: server instructions, tool descriptions, boundaries,
next-action hints and prompt bodies.

Plain constants and two small formatters; no logic that decides what a payload holds.
"""

from __future__ import annotations

import json

# memdsl's line for an empty MUST layer, and memhub's when a budget emptied it: shared
# with the JSON API's text, which the query pack renders.
from memhubd.query.pack import MUST_LEFT_OUT as MUST_LEFT_OUT
from memhubd.query.pack import NO_CONSTRAINTS as NO_CONSTRAINTS
from memhubd.query.pack import must_left_out as must_left_out

INSTRUCTIONS = (
    "memhub serves governed memory: declarations written as .mem source, kept in named "
    "workspaces. Every memory tool takes a `workspace` argument; leave it out only when "
    "you can use exactly one workspace (memory_workspaces lists them). "
    "Protocol: (1) read memory_map once at the start of a session to learn what is stored "
    "and the words this workspace uses for its subjects, scopes, modules and types. "
    "(2) call memory_query with the task's key nouns, phrased in that vocabulary, and "
    "respect the layers of the evidence pack: MUST items are hard rules you enforce even "
    "when they look unrelated; SHOULD items are guidance; CONTEXT items are scored "
    "candidate facts, never rules; show CONFLICT items to the user rather than picking a "
    "side; say plainly what MISSING lists instead of guessing. "
    "(3) a no_match status is a signal to retry, not proof that nothing is known: read "
    "evidence_pack.search_trace (filters may have excluded hits), re-ask with the returned "
    "vocabulary, browse memory_list, or read the raw sources under "
    "memhub://{workspace}/file/{file_id}. "
    "(4) call memory_explain on a declaration before citing it, and cite its id. "
    "(5) before acting on or returning a consequential draft, run memory_check: BLOCK "
    "forbids the draft, NEEDS_REVIEW is not approval. "
    "(6) writes are propose-only: memory_propose stages one declaration in the "
    "workspace's review queue (memory_review_list shows the queue) and nothing becomes "
    "memory until a person approves it with `memctl review approve`; never present a "
    "pending proposal as accepted memory. "
    # mempal's protocol, where it fits a governed, shared memory.
    "Recall keeps what was said (transcripts, notes) as drawers; governed memory is what "
    "was agreed. (7) verify before asserting: search recall with memory_search before "
    "stating facts about past work, and when asked why something was done, instead of "
    "relying on general knowledge or this conversation alone; pass max_chars to keep long "
    "hits short and read one whole with memory_get_drawer. "
    "(8) cite everything: a drawer_id with its source_file for what was said, a "
    "declaration id for what was agreed; an answer you cannot cite is a guess. "
    "(9) capture firm decisions only (architecture choices, API or naming contracts, a "
    "bug's root cause and fix, spec changes), never brainstorming or raw chat: "
    "memory_ingest stores one verbatim with its rationale; memory_propose_from_recall turns "
    "a drawer into a proposal whose evidence quotes it, and it becomes memory only when a "
    "person approves it. "
    "(10) fact-check relations against what is known before ingesting them. "
    "(11) at the end of a session, write one memory_diary entry (OBSERVATION, LESSON or "
    "PATTERN) about how you worked; it stays private to you and reviewers unless shared. "
    "(12) cowork: memory_cowork_push leaves a short message a partner reads at its next "
    "prompt (not in real time, never to yourself, not for what must persist; on "
    "inbox_full stop and wait); memory_peek_partner shows a partner's current activity. "
    "Peek for current state, search for settled history."
)

# Boundaries and next actions are memdsl 0.5.1's words (an agent moving from memdsl-mcp
# reads the same contract); only the texts that name a command say memhub's own.
QUERY_BOUNDARY = (
    "MUST items are hard rules to enforce, not context to weigh. CONTEXT "
    "items are scored candidates. Never average the two kinds of signal. "
    "Surface CONFLICT items instead of silently resolving them."
)
MAP_BOUNDARY = (
    "The map is a navigation index, not the memory itself: "
    "claims are truncated and carry no evidence. Call "
    "memory_explain (or read the .mem source) before citing or "
    "acting on any item."
)
EXPLAIN_BOUNDARY = (
    "evidence.quote and source anchor this declaration to its origin; "
    "cite the declaration id, do not paraphrase it as your own inference."
)
CHECK_BOUNDARY = (
    "BLOCK forbids the candidate. NEEDS_REVIEW is not approval: it means "
    "an applicable natural-language constraint lacks a deterministic guard."
)
LINT_BOUNDARY = (
    "Diagnostics describe the memory source; fixing it is a human edit, not an MCP write."
)
# memdsl names `memdsl review approve`; memhub's reviewers use memctl.
PROPOSE_BOUNDARY = (
    "A proposal is not memory. It sits in the review queue and is never "
    "served by memory_query until a human approves it with "
    "`memctl review approve`. Do not treat a pending proposal as an "
    "accepted fact or rule."
)
STATUS_BOUNDARY = (
    "Writes are propose-only: memory_propose stages a proposal for "
    "human review; this server never approves or serves unapproved memory."
)


NEXT_EXPLAIN_BEFORE_CITING = "Call memory_explain on any [id] before citing it as evidence."
NEXT_MISSING = (
    "MISSING lists known gaps and open issues; treat them as unknowns, not as absence of rules."
)
NEXT_NO_MATCH = (
    "No match: re-ask using this workspace's own vocabulary "
    "(see vocabulary.subjects/aliases/scopes/types), or call "
    "memory_list to browse declarations."
)


def next_excluded(excluded: int) -> str:
    return (
        f"{excluded} declaration(s) matched the query but were "
        "excluded by your types/subject filter; see "
        "evidence_pack.search_trace.excluded_by_filters and retry "
        "without the filter, or memory_explain those ids directly."
    )


NEXT_QUERY_REQUIRED = "Provide a non-empty query."
NEXT_FIX_ARGUMENT = "Shorten or correct the argument the error names, then call again."
NEXT_CHECK_INPUT = "Provide both the attempted task and the candidate action or draft."
NEXT_CHECK = {
    "block": (
        "Do not use the candidate. Revise it to remove every cited violation, "
        "then call memory_check again."
    ),
    "needs_review": (
        "Do not assume approval. Route each unknown constraint to a human or semantic evaluator."
    ),
    "allow": (
        "The deterministic guard checks passed; continue to respect the cited MUST declarations."
    ),
}
NEXT_ID_REQUIRED = "Pass a declaration id (type:name or name)."
NEXT_BROWSE_IDS = "Call memory_list to browse available declaration ids."
NEXT_EXPLAIN_ITEM = "Call memory_explain on an id to see its evidence and relations."
NEXT_MAP = (
    "Keep this map in context and query with the map's own nouns (subjects, scopes, module names).",
    "Call memory_explain on an id for full evidence and relations.",
)
NEXT_TYPES = (
    "Choose a loaded domain type whose runtime_role and required_fields match the memory "
    "being proposed."
)
NEXT_MEMDSL_FILES = "Read memdsl://file/{file_id} for the raw .mem source."
NEXT_FILES = "Read memhub://{workspace}/file/{file_id} for the raw .mem source."
NEXT_FILE_NOT_FOUND = "Read memdsl://files for valid file ids."
# memdsl says `memdsl lint`; memhub's command for a served workspace is memctl's.
NEXT_UNAVAILABLE = (
    "Run `memctl lint` on the workspace and fix the reported source, manifest, or schema file."
)
NEXT_STATE_UNAVAILABLE = (
    "The file the error names cannot be read or written (its permissions, a read-only or "
    "full disk): have the operator fix that, then retry; the memory itself needs no change."
)
NEXT_RETRY = "Retry in a few seconds."
NEXT_PROPOSE_INVALID = (
    "Fix the declaration source: it must parse to exactly one declaration "
    "and pass lint against the live workspace (types with the "
    "requires_evidence capability need a verbatim evidence quote)."
)


def next_propose(workspace: str, proposal_id: str) -> str:
    """memdsl's hint with memhub's review commands (memctl, the workspace by -w)."""
    return (
        "Tell the user a proposal is pending and how to review it: "
        f"`memctl -w {workspace} review list` then "
        f"`memctl -w {workspace} review approve {proposal_id} --into <file.mem>`."
    )


def next_supersede(declaration_id: str) -> str:
    """memhub's hint after a refused re-proposal of an existing id."""
    return (
        f"'{declaration_id}' already exists and is never overwritten: to correct it, propose "
        f'the corrected declaration under a new name that declares supersedes: "{declaration_id}".'
    )


# memdsl says "via the memdsl review CLI".
NEXT_REVIEW = "Approval and rejection are human-only, via the memctl review CLI."


def next_review_page(more: int, offset: int, status: str, limit: int, workspace: str) -> str:
    """memhub's hint when a page of the review queue (asked with an offset) has more after
    it: the call for the next page, every argument of the page's given (the defaults would
    read another status or page size)."""
    return (
        f"{more} more proposal(s) follow, the newest last: call memory_review_list again "
        f"with status={json.dumps(status)}, limit={limit}, offset={offset}, "
        f"workspace={json.dumps(workspace)}."
    )


NEXT_STATUS = (
    "Pass one of these workspace names as `workspace` to the memory tools, then start "
    "with memory_map."
)
NEXT_TOO_LARGE = (
    "Narrow the request: a smaller limit, types or subject filters, or one workspace file "
    "at a time."
)

# Tool descriptions: each says when to pick the tool without needing the instructions.
DESCRIBE = {
    "memory_map": (
        "Start here. A compact index of every active declaration in a workspace, grouped by "
        "module, with one-line claims and the workspace's vocabulary (subjects, aliases, "
        "scopes, types). Read once per session before querying; do not cite it."
    ),
    "memory_query": (
        "Answer a question or prepare a task from memory: returns a layered evidence pack. "
        "MUST = hard rules to obey, SHOULD = guidance, CONTEXT = ranked candidate facts, "
        "CONFLICT = contradictions to show the user, MISSING = known gaps. status "
        "'no_match' means retry with the returned vocabulary, not that nothing exists. "
        "Filter with types (or legacy kinds) and subject; limit is 1-50 (default 8)."
    ),
    "memory_check": (
        "Before acting on or returning a consequential draft (command, commit, message, "
        "answer), check it against the applicable MUST rules. Verdict allow, block (do not "
        "use the draft) or needs_review (not approval). Assert allowed exceptions by name."
    ),
    "memory_explain": (
        "Show one declaration in full by id (type:name or bare name): every field, its "
        "evidence quote and source, its relations and which declarations point at it. "
        "Call before citing an id."
    ),
    "memory_list": (
        "Browse declarations when a query misses or to enumerate one type or subject: id, "
        "type, role, subject, scope, status and a short claim for each. Active ones only "
        "unless include_inactive; limit 1-500 (default 100)."
    ),
    "memory_types": (
        "The memory types a workspace accepts: runtime role, capabilities and required "
        "fields of each. Use before writing a declaration, or to learn what a type means."
    ),
    "memory_lint": (
        "Diagnostics for a workspace's .mem sources (errors, warnings, files that failed "
        "to load). Use when results look wrong or incomplete."
    ),
    "memory_propose": (
        "Propose one .mem declaration for human review. Fail-closed: it must parse to "
        "exactly one declaration and pass lint against the workspace (types that require "
        "evidence need a verbatim quote); a refusal is an ok:false payload listing the "
        "errors. An accepted proposal is stored in the review queue as pending_review with "
        "a proposal_id; it is NOT memory until a person approves it. To correct an "
        "existing declaration, propose a new name that declares supersedes: <old id>."
    ),
    "memory_review_list": (
        "List the proposals in a workspace's review queue (status pending, approved, "
        "rejected or all; limit 1-200): what was proposed, by whom, and how it was "
        "decided. Oldest first: when total is more than the proposals shown, page on with "
        "offset (the newest are last). Approving and rejecting are for people only, with "
        "`memctl review`."
    ),
    "memory_review_show": (
        "Show one proposal of the review queue by id (from memory_review_list): its .mem "
        "source, proposer and reason, how it was decided (reject_reason), and for a pending "
        "one its validation against the workspace now. Read-only: approving and rejecting "
        "are for people only, with `memctl review`."
    ),
    "memory_status": (
        "Who you are on this server (token name, scopes, roles) and the health of the "
        "workspaces you may use: declarations, files, load problems. Use first when a "
        "tool reports an error. The answer also repeats the server's instructions."
    ),
    "memory_workspaces": (
        "The workspaces you may use, with their health and size. Use to find the value of "
        "the `workspace` argument the other tools take."
    ),
}
WORKSPACE_ARGUMENT = "Workspace name. May be left out only when you can use exactly one workspace."


def task_brief(task: str) -> str:
    """The `memdsl_task_brief` prompt: how to use memory while doing one task."""
    return (
        "Work on the task below with the memory server as your source of rules and facts.\n"
        "1. Read memory_map first, so you know what is stored and which words it uses.\n"
        "2. Query with the task's key nouns in that vocabulary (memory_query).\n"
        "3. Enforce every MUST item, even one that looks unrelated. Follow SHOULD items as "
        "guidance. Use CONTEXT items as candidate facts, never as rules.\n"
        "4. Show CONFLICT items to the user instead of settling them yourself, and say what "
        "MISSING lists rather than filling the gap with a guess.\n"
        "5. A no_match answer means ask again: read search_trace for filters that excluded "
        "hits, re-query with the vocabulary, or browse memory_list and the raw sources.\n"
        "6. memory_explain a declaration before you cite it, and cite its id.\n"
        "7. Before returning a consequential draft, run memory_check on it. BLOCK means "
        "revise; NEEDS_REVIEW means the question is still open, not allowed.\n\n"
        f"Task: {task}"
    )


def write_declaration(fact: str) -> str:
    """The `memdsl_write_declaration` prompt: turning an observation into one proposal."""
    return (
        "Write the observation below as exactly one .mem declaration and propose it.\n"
        "- Call memory_types first and choose a type the workspace has loaded whose "
        "runtime_role and required_fields fit the observation. Never invent a type.\n"
        "- Add an evidence block whose quote is copied word for word from the source; never "
        "make up or paraphrase a quote.\n"
        "- For the subject, reuse an existing symbol: find the types whose runtime_role is "
        "symbol with memory_types, then browse them with memory_list. Declare a new symbol "
        "separately only when none fits.\n"
        "- When it replaces an older declaration, say `supersedes: <old id>` rather than "
        "contradicting the old one.\n"
        "- Write the exact type name, then a stable id, then the field block.\n"
        "- Submit it with memory_propose. Fix and resubmit if it answers ok:false. A "
        "stored proposal becomes memory only after a person approves it: tell the user its "
        "proposal_id, and never present it as accepted memory.\n\n"
        f"Observation: {fact}"
    )
