"""Transcript and document formats: detection by content, and parsing into turns.

Claude Code session JSONL, Codex CLI rollout JSONL, ChatGPT `conversations.json`,
Slack export JSON, Markdown and plain text. Parsers return `Parsed` values (turns
with speaker, timestamp and position, or a document's text); they never chunk,
route or store, and never read files themselves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memhub_protocol.times import EARLIEST_TIME, LATEST_TIME, is_ambiguous_digits, parse_iso

FORMATS = ("claude-code", "chatgpt", "codex", "slack", "markdown", "text")
CHAT_FORMATS = frozenset({"claude-code", "chatgpt", "codex", "slack"})
# What `detect` calls JSON (a document or JSONL) that is none of the exports above: it
# parses to nothing, with `NOT_AN_EXPORT` as the reason. Stored as text, a settings file
# or a Slack `users.json` would make profiles and phone numbers searchable.
UNKNOWN_JSON = "json"
NOT_AN_EXPORT = "JSON but not a known export; use --format text to store it as text"
# Tool calls and outputs are kept, but cut: a 2 MB build log is not worth recalling whole.
MAX_TOOL_CHARS = 600

_CLAUDE_TYPES = frozenset({"user", "assistant", "human", "summary", "system"})
# Claude Code's result for a tool call the user rejected opens with `_REJECTED`; what the
# user typed on rejecting it (how to go on) follows `_REJECTED_SAID`: the user's words,
# kept whole and as theirs. Only such a result is split: tool output that quotes the
# sentence (a file read, a grep) is tool output, cut like any other.
_REJECTED = "The user doesn't want to proceed with this tool use."
_REJECTED_SAID = "To tell you how to proceed, the user said:"
# The result of an `AskUserQuestion` call: `_ANSWERED`, then each question with the
# option the user picked or what they typed (`"question"="answer", …`), then `_ANSWERED_END`.
# Those are the user's words too, taken only from a result of a call of that tool.
_ASK_TOOL = "AskUserQuestion"
_ANSWERED = "User has answered your questions:"
_ANSWERED_END = "You can now continue with the user's answers in mind."
# How `user` lines that Claude Code writes itself start: a slash command's wrapper and
# its output, a `!` shell command and its output, a background task's notice.
_CLAUDE_HARNESS = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
)
# What Claude Code writes as a `user` line's text when the user stops it (Esc): the whole
# text of a block, not the user's words. A line of markers alone is kept as a tool turn,
# as the harness lines above are; beside what the user typed, a marker is left out.
_CLAUDE_INTERRUPTED = frozenset(
    {"[Request interrupted by user]", "[Request interrupted by user for tool use]"}
)
# Context an IDE integration adds to the user's message as text blocks of their own: the
# file opened, the lines selected. A block that, trimmed, is such blocks only, each closed
# by the tag that opened it, is left out (as Codex's injected context is); such blocks
# opening a text (a message sent as one string) are left out of it.
_CLAUDE_IDE = re.compile(r"(?:<(ide_[A-Za-z0-9_]+)\b[^>]*>.*?</\1>\s*)+", re.DOTALL)
_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
# Response items; older rollouts write them at the top level, with no `payload` wrapper.
_CODEX_ITEMS = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)
# A Markdown heading line (`# Title` to `###### Title`), and a fence opening or closing a
# code block (three or more backticks or tildes, indented at most three spaces).
_HEADING = re.compile(r"^#{1,6}[ \t]+\S", re.MULTILINE)
_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
# What Codex writes into "user" messages that the user did not type: the contextual
# fragments codex-rs lists (core/src/context), each known as Codex knows it: the text item,
# trimmed, starts with the opening marker and ends with the closing one, in any case. Such
# items are left out; a message that merely starts like one is the user's words.
_CODEX_INJECTED = (
    ("<environment_context>", "</environment_context>"),
    ("<user_instructions>", "</user_instructions>"),
    ("# agents.md instructions for ", "</instructions>"),
    ("<skill>", "</skill>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
    ("<hook_prompt", "</hook_prompt>"),
    ("<extension_context>", "</extension_context>"),
    ("<goal_context>", "</goal_context>"),
)
# Injected items known by their whole text: a hook's additional context, closed by the tag
# that opened it, and the warnings older versions wrote, word for word but for the tool,
# counts, models and links they name.
_CODEX_INJECTED_WHOLE = (
    re.compile(r"<external_([^>]*)>.*</external_\1>", re.DOTALL | re.IGNORECASE),
    re.compile(
        r"Warning: apply_patch was requested via \S+\. "
        r"Use the apply_patch tool instead of exec_command\."
    ),
    re.compile(
        r"Warning: The maximum number of unified exec processes you can keep open is \d+ "
        r"and you currently have \d+ processes open\. Reuse older processes or close them "
        r"to prevent automatic pruning of old processes"
    ),
    re.compile(
        r"Warning: Your account was flagged for potentially high-risk cyber activity and "
        r"this request was routed to \S+ as a fallback\. To regain access to \S+, apply "
        r"for trusted access: \S+ or learn more: \S+"
    ),
)
# A shell command the user ran (`!cmd`) and its output, also a "user" item: a tool turn.
_CODEX_USER_SHELL = ("<user_shell_command>", "</user_shell_command>")
# The text items Codex writes around an image the user pasted (`<image name=[Image #1]
# path="…">`, the image, `</image>`): markup, not words. The opening one stands for the
# image as `[image]`, as a Claude Code image block does.
_CODEX_IMAGE = re.compile(r"<image\b[^<>]*>|</image>", re.IGNORECASE)


class FormatError(ValueError):
    """The text is not valid in the format it was declared (or detected) to be in."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One message. `role` is user, assistant, tool or summary; `speaker` names who."""

    role: str
    speaker: str
    text: str
    said_at: int | None = None
    locator: str = ""


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation of a source (a ChatGPT export holds many)."""

    turns: tuple[Turn, ...]
    title: str = ""
    named_speakers: bool = False  # render "name: text" (Slack) rather than "> text"


@dataclass(frozen=True, slots=True)
class Parsed:
    kind: str
    conversations: tuple[Conversation, ...] = ()
    text: str = ""  # documents (markdown, text)
    start: int = 0  # where `text` starts in the text parsed (the blank characters before)
    project: str = ""  # the working directory's name, when a transcript records one
    meta: dict[str, Any] = field(default_factory=dict)
    reason: str = ""  # why a source that parses to nothing is left out (UNKNOWN_JSON)


# Epoch seconds as a transcript writes them: ASCII digits, a fraction at most (as the
# doors read digits, and Slack writes `ts`).
_SECONDS = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def epoch(value: Any) -> int | None:
    """Seconds since the epoch from an ISO 8601 string (UTC when it names no zone) or a
    number; None if neither, if digits alone could be a date as well (`2025`,
    `20250603`), or if it is not finite or outside years 1 to 9999."""
    if isinstance(value, bool) or value is None:
        return None
    seconds: float | None = None
    if isinstance(value, int | float):
        seconds = value
    elif isinstance(value, str) and value.strip() and not is_ambiguous_digits(value):
        text = value.strip()
        if _SECONDS.fullmatch(text):  # Slack's "1717400000.123456"; never "1.7e9" or "1_7"
            seconds = float(text)
        else:
            try:
                seconds = parse_iso(text).timestamp()
            except (ValueError, OverflowError):
                return None
    # Times outside years 1 to 9999 are no times a transcript could hold (and some would
    # not fit the store's integers): such a value reads as unknown.
    if seconds is None or not EARLIEST_TIME <= seconds <= LATEST_TIME:  # NaN fails both
        return None
    return int(seconds)


def _clip(text: str, limit: int = MAX_TOOL_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


class JsonLines(list[tuple[int, dict[str, Any]]]):
    """A JSONL text's objects with their line numbers; `skipped`: the numbers of lines
    that were not JSON objects (a line cut short by a crash, a stray one)."""

    skipped: list[int]

    def __init__(self, lines: list[tuple[int, dict[str, Any]]], skipped: list[int]) -> None:
        super().__init__(lines)
        self.skipped = skipped


# Lines of a transcript that are not JSON objects are left out (and reported) when they
# are at most this share of its lines, or two lines (a stray line and a last line cut
# short), and fewer than those that are; more, and it is no JSONL file.
_SKIPPABLE_SHARE = 0.1
_SKIPPABLE_LINES = 2


def json_lines(text: str) -> JsonLines | None:
    """A JSONL text's objects with their line numbers, read once for `detect` and `parse`;
    None when the text is not one JSON object per line."""
    return _json_lines(text) if text.lstrip().startswith("{") else None


def _jsonl_lines(text: str) -> list[str]:
    """The lines of a JSONL text, without their ends. Only a line feed ends a line (a
    carriage return before it goes with it): JSON strings may hold U+2028, U+2029 and
    U+0085 raw (JavaScript's JSON.stringify writes U+2028 so), and `str.splitlines`
    would cut at those too."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def _json_lines(text: str) -> JsonLines | None:
    """Every non-empty line as a JSON object, with its line number; None when the text
    is not JSONL: no such line, or more lines that are not than `_SKIPPABLE_SHARE`
    allows (those it allows are left out, named in `skipped`)."""
    out = []
    skipped = []
    for number, line in enumerate(_jsonl_lines(text), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):  # nested past the parser's depth: not ours
            value = None
        if isinstance(value, dict):
            out.append((number, value))
        else:
            skipped.append(number)
            if len(skipped) > _SKIPPABLE_LINES and len(skipped) > len(out):
                return None  # plainly no JSONL: stop reading
    allowed = max(_SKIPPABLE_LINES, int(_SKIPPABLE_SHARE * (len(out) + len(skipped))))
    if len(skipped) > allowed or len(out) <= len(skipped):
        return None
    return JsonLines(out, skipped)


def _json_document(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # nested past the parser's depth: not ours
        return None


# --------------------------------------------------------------------------- detection


def detect(text: str, name: str = "", lines: JsonLines | None = None) -> str:
    """The format of `text`, decided by its content (the name only separates Markdown
    from plain text when the content does not): one of FORMATS, or UNKNOWN_JSON for
    JSON that is none of them. `lines`: `json_lines(text)`, if read."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        lines = lines or _json_lines(stripped)
        if lines:
            kind = _detect_lines([value for _number, value in lines])
            if kind:
                return kind
    if stripped.startswith(("[", "{")):
        data = _json_document(stripped)
        kind = _detect_document(data)
        if kind:
            return kind
        if lines or data is not None:
            return UNKNOWN_JSON
    # Headings are looked for only when there is no fence: a `# comment` in a code block
    # is no heading, and a text with a fence is Markdown anyway.
    if _FENCE.search(text) or _HEADING.search(text):
        return "markdown"
    if name.lower().endswith(_MARKDOWN_SUFFIXES):
        return "markdown"
    return "text"


def heading_starts(text: str) -> list[int]:
    """Where each Markdown heading line of `text` starts (an index into `text`), leaving
    out the lines of fenced code blocks (```` ``` ```` or `~~~`, to the closing fence
    of the same kind or to the end): a shell comment in a code block is no heading."""
    if not _FENCE.search(text):
        return [m.start() for m in _HEADING.finditer(text)]
    starts: list[int] = []
    fence = ""  # the open block's fence; "" outside one
    offset = 0
    for line in text.split("\n"):
        found = _FENCE_LINE.match(line)
        marker = found.group(1) if found else ""
        if fence:
            rest = line[found.end() :] if found else ""
            if marker[:1] == fence[0] and len(marker) >= len(fence) and not rest.strip():
                fence = ""
        elif found and not (marker[0] == "`" and "`" in line[found.end() :]):
            fence = marker  # (a backtick fence's info string holds no backtick)
        elif _HEADING.match(line):
            starts.append(offset)
        offset += len(line) + 1
    return starts


def _detect_lines(values: list[dict[str, Any]]) -> str | None:
    # A line with no `type` of text (`{}`, a number, a list) is left out of the vote, as
    # a line that is no JSON object is: one odd line must not cost a whole session. (An
    # older rollout's header and state lines have no `type` at all.)
    allowed = max(_SKIPPABLE_LINES, int(_SKIPPABLE_SHARE * len(values)))
    plain = [value for value in values if isinstance(value.get("type"), str | None)]
    if len(values) - len(plain) <= allowed and _older_codex(plain):
        return "codex"
    typed = [value for value in values if isinstance(value.get("type"), str)]
    untyped = len(values) - len(typed)
    if untyped > allowed or len(typed) <= untyped:
        return None
    values = typed
    types = [value["type"] for value in values]
    if "session_meta" in types and all(t in _CODEX_TYPES for t in types):
        return "codex"
    if all("payload" in v for v in values) and any(t == "response_item" for t in types):
        return "codex"
    if any(
        t in _CLAUDE_TYPES and _claude_message(v) is not None
        for t, v in zip(types, values, strict=True)
    ):
        return "claude-code"
    # A session file can hold only summaries (of sessions continued elsewhere).
    if all(t in _CLAUDE_TYPES for t in types) and any(_claude_summary(v) for v in values):
        return "claude-code"
    return None


def _older_codex(values: list[dict[str, Any]]) -> bool:
    """Whether the lines are a rollout of older Codex CLIs: a bare `{"id", "timestamp"}`
    header, `{"record_type": "state"}` lines and unwrapped response items, with at least
    one message (the header is missing from every part of a cut transcript but the first)."""
    messages = 0
    for index, value in enumerate(values):
        kind = value.get("type")
        if kind is None:
            header = index == 0 and "id" in value and "timestamp" in value
            if not header and value.get("record_type") != "state":
                return False
        elif not isinstance(kind, str) or kind not in _CODEX_ITEMS or "payload" in value:
            return False
        elif kind == "message" and isinstance(value.get("content"), str | list):
            messages += value.get("role") in ("user", "assistant")
    return messages > 0


def _detect_document(data: Any) -> str | None:
    if isinstance(data, list):
        head = [item for item in data[:5] if isinstance(item, dict)]
        if any(
            item.get("type") == "message"
            and "text" in item
            and ("user" in item or "username" in item or "bot_id" in item)
            for item in head
        ):
            return "slack"
        if head and all("mapping" in item for item in head):
            return "chatgpt"
        if head and all("role" in item and "content" in item for item in head):
            return "chatgpt"
    if isinstance(data, dict) and (
        isinstance(data.get("mapping"), dict) or isinstance(data.get("messages"), list)
    ):
        return "chatgpt"
    return None


# --------------------------------------------------------------------------- parsing


def parse(text: str, kind: str, name: str = "", lines: JsonLines | None = None) -> Parsed:
    """Parse `text` as `kind` (one of FORMATS); raises FormatError when it is not.
    `lines`: `json_lines(text)`, if read."""
    if kind == "claude-code":
        return _parse_claude(text, lines)
    if kind == "codex":
        return _parse_codex(text, lines)
    if kind == "chatgpt":
        return _parse_chatgpt(text)
    if kind == "slack":
        return _parse_slack(text)
    if kind in ("markdown", "text"):
        body = text.strip()
        return Parsed(kind, text=body, start=len(text) - len(text.lstrip()) if body else 0)
    if kind == UNKNOWN_JSON:
        return Parsed(kind, reason=NOT_AN_EXPORT)
    raise FormatError(f"unknown format {kind!r}; known: {', '.join(FORMATS)}")


def _need_lines(text: str, kind: str, lines: JsonLines | None) -> JsonLines:
    lines = lines or _json_lines(text)
    if lines is None:
        for number, line in enumerate(_jsonl_lines(text), 1):
            if line.strip():
                try:
                    value = json.loads(line)
                except ValueError as error:
                    raise FormatError(f"line {number} is not JSON: {error}") from None
                except RecursionError:
                    raise FormatError(f"line {number} is nested too deeply") from None
                if not isinstance(value, dict):
                    raise FormatError(f"line {number} is not a JSON object")
        raise FormatError(f"no {kind} lines")
    return lines


def _blocks_text(content: Any, asked: set[str] | None = None) -> tuple[list[str], bool, list[str]]:
    """Readable pieces of a Claude message's content, whether all were tool results, and
    the words the user typed on rejecting a tool call or answering the assistant's
    questions (taken out of its result). `asked`: the ids of the session's
    `AskUserQuestion` calls so far, to which this content's calls are added."""
    if isinstance(content, str):
        return [content], False, []
    if not isinstance(content, list):
        return [], False, []
    pieces: list[str] = []
    said: list[str] = []
    results = 0
    for block in content:
        if isinstance(block, str):
            pieces.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            pieces.append(block["text"])
        elif kind == "tool_use":
            if asked is not None and block.get("name") == _ASK_TOOL and block.get("id"):
                asked.add(str(block["id"]))
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False, sort_keys=True)
            pieces.append(_clip(f"[tool_use {block.get('name', '?')}] {arguments}"))
        elif kind == "tool_result":
            results += 1
            output = "\n".join(_blocks_text(block.get("content"))[0])
            output, words = _rejected_words(block, output)
            if not words and asked and str(block.get("tool_use_id") or "") in asked:
                output, words = _answered_words(block, output)
            if words:
                said.append(words)
            pieces.append(_clip("[tool_result] " + output))
        elif kind == "image":
            pieces.append("[image]")
        # "thinking" blocks are the model's private reasoning, often huge: not recalled.
    return pieces, bool(content) and results == len(content), said


def _rejected_words(block: dict[str, Any], output: str) -> tuple[str, str]:
    """A tool result's output, and the words the user typed on rejecting the call taken out
    of it: "" when the result is no rejection (it opens otherwise, or its `is_error` is
    there and not true) or the user typed nothing."""
    if block.get("is_error", True) is not True or not output.lstrip().startswith(_REJECTED):
        return output, ""
    before, marker, words = output.partition(_REJECTED_SAID)
    return (before, words.strip()) if marker and words.strip() else (output, "")


def _answered_words(block: dict[str, Any], output: str) -> tuple[str, str]:
    """An `AskUserQuestion` result's output, and the user's answers taken out of it ("" when
    it is an error or not the answers' shape)."""
    if block.get("is_error") is True or not output.lstrip().startswith(_ANSWERED):
        return output, ""
    answers = output.lstrip()[len(_ANSWERED) :].strip()
    if answers.endswith(_ANSWERED_END):
        answers = answers[: -len(_ANSWERED_END)].rstrip()
        answers = answers[:-1] if answers.endswith('".') else answers  # the sentence's stop
    return (_ANSWERED, answers) if answers else (output, "")


def _claude_summary(value: dict[str, Any]) -> str | None:
    """The text of a Claude Code `summary` line, or None when it is none."""
    summary = value.get("summary")
    return summary.strip() if value.get("type") == "summary" and isinstance(summary, str) else None


def _claude_message(value: dict[str, Any]) -> tuple[str, Any] | None:
    """(role, content) of one Claude Code line, or None when it carries no message."""
    message = value.get("message")
    if isinstance(message, dict) and "content" in message:
        return str(message.get("role") or value.get("type")), message["content"]
    if isinstance(message, str):  # the simplified {"type":"human","message":"hi"} shape
        return str(value.get("type")), message
    content = value.get("content")
    if isinstance(content, dict) and isinstance(content.get("parts"), list):
        content = [part for part in content["parts"] if isinstance(part, str)]
    if isinstance(content, str | list):
        return str(value.get("type")), content
    return None


def _queued_prompt(value: dict[str, Any]) -> Any:
    """What the user typed while Claude was working, from an `attachment` line of type
    `queued_command` (Claude Code writes no user line for it); None when the line is no
    such prompt: other attachments, and queued commands of another mode (a background
    task's notice) or from someone other than the user."""
    attachment = value.get("attachment") if value.get("type") == "attachment" else None
    if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
        return None
    origin = attachment.get("origin")
    by_user = not isinstance(origin, dict) or origin.get("kind", "human") == "human"
    if attachment.get("commandMode", "prompt") != "prompt" or not by_user:
        return None
    return attachment.get("prompt")


def _claude_synthetic(value: dict[str, Any]) -> bool:
    """Whether a line is one Claude Code writes in the assistant's place when no reply
    came (an API error, a usage limit): marked `isApiErrorMessage`, or of the model
    `<synthetic>`. The model said nothing there."""
    message = value.get("message")
    model = message.get("model") if isinstance(message, dict) else None
    return value.get("isApiErrorMessage") is True or model == "<synthetic>"


def _claude_typed(content: Any) -> tuple[Any, list[str]]:
    """A user message's content without the text blocks Claude Code added to it (an IDE's
    context, interrupt markers), and the interrupt markers taken out."""
    blocks = [content] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return content, []
    kept: list[Any] = []
    interrupted: list[str] = []
    for block in blocks:
        text = block if isinstance(block, str) else None
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
        text = text.strip() if isinstance(text, str) else None
        ide = _CLAUDE_IDE.match(text) if text is not None and text.startswith("<ide_") else None
        if text in _CLAUDE_INTERRUPTED:
            interrupted.append(text)
        elif ide is None:
            kept.append(block)
        elif rest := text[ide.end() :].strip():
            # The IDE's blocks opening the text the user typed after them (one string).
            kept.append(rest if isinstance(block, str) else {**block, "text": rest})
    if isinstance(content, str):
        return (kept[0] if kept else ""), interrupted
    return kept, interrupted


def _claude_turns(value: dict[str, Any], where: str, asked: set[str] | None = None) -> list[Turn]:
    """The turns one Claude Code line holds (none for lines that hold no message).
    `asked`: as `_blocks_text` takes it."""
    summary = _claude_summary(value)
    if summary is not None:
        return [Turn("summary", "summary", "[summary] " + summary, None, where)]
    at = epoch(value.get("timestamp"))
    prompt = _queued_prompt(value)
    if prompt is not None:
        body = "\n".join(p.strip() for p in _blocks_text(prompt)[0] if p.strip())
        return [Turn("user", "user", body, at, where)] if body else []
    if value.get("type") not in ("user", "assistant", "human") or value.get("isMeta"):
        return []
    if _claude_synthetic(value):
        return []
    found = _claude_message(value)
    if found is None:
        return []
    role, content = found
    interrupted: list[str] = []
    if role in ("user", "human"):
        content, interrupted = _claude_typed(content)
    pieces, only_results, said = _blocks_text(content, asked)
    body = "\n".join(p.strip() for p in pieces if p.strip())
    if not body:
        return [Turn("tool", "tool", "\n".join(interrupted), at, where)] if interrupted else []
    role = "user" if role in ("user", "human") else "assistant"
    if role == "user" and value.get("isCompactSummary") is True:
        return [Turn("summary", "summary", "[summary] " + body, at, where)]
    if role == "user" and body.startswith(_CLAUDE_HARNESS):
        return [Turn("tool", "tool", _clip(body), at, where)]
    if role == "user" and only_results:
        role = "tool"
    words = [Turn("user", "user", text, at, where) for text in said]
    return [Turn(role, role, body, at, where), *words]


def _parse_claude(text: str, lines: JsonLines | None = None) -> Parsed:
    """The main thread as one conversation, then each subagent run's sidechain lines
    (`isSidechain`) as one of its own: interleaved with the main thread, a subagent's
    prompt would start an exchange and file the main thread's answer under it."""
    turns: list[Turn] = []
    runs: dict[str, list[Turn]] = {}  # sidechain turns by their run's first line's uuid
    run_of: dict[str, str] = {}  # a sidechain line's uuid -> its run
    project = ""
    session = ""
    asked: set[str] = set()  # ids of the AskUserQuestion calls so far
    for number, value in _need_lines(text, "Claude Code", lines):
        thread = turns
        if value.get("isSidechain") is True:
            # A run: the sidechain lines chained to one whose parent is no sidechain line.
            uuid, parent = value.get("uuid"), value.get("parentUuid")
            run = run_of.get(parent) if isinstance(parent, str) else None
            if run is None:
                run = uuid if isinstance(uuid, str) else ""
            if isinstance(uuid, str):
                run_of[uuid] = run
            thread = runs.setdefault(run, [])
        project = project or str(value.get("cwd") or "")
        session = session or str(value.get("sessionId") or "")
        thread.extend(_claude_turns(value, f"line {number}", asked))
    conversations = tuple(Conversation(tuple(t)) for t in (turns, *runs.values()) if t)
    if not conversations:
        raise FormatError("no user or assistant messages in this Claude Code session")
    name = project.rstrip("/").rsplit("/", 1)[-1] if project else ""
    return Parsed("claude-code", conversations, project=name, meta={"session": session})


# What `_codex_texts` gives for an image item itself (`input_image`): markup as the
# wrapper Codex writes around it, so that a wrapped image reads `[image]` once and an
# image with no wrapper (older rollouts) reads `[image]` too.
_CODEX_IMAGE_ITEM = "<image>"


def _codex_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    blocks = content if isinstance(content, list) else []
    texts: list[str] = []
    wrapped = False  # the item before was the opening wrapper of an image
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "input_image":
            if not wrapped:
                texts.append(_CODEX_IMAGE_ITEM)
            wrapped = False
        elif isinstance(block.get("text"), str):
            text = block["text"]
            item = text.strip()
            wrapped = bool(_CODEX_IMAGE.fullmatch(item)) and not item.startswith("</")
            texts.append(text)
    return texts


def _codex_marked(item: str, markers: tuple[str, str]) -> bool:
    """Whether a text item (trimmed, lower case) opens and closes with these markers."""
    start, end = markers
    return item.startswith(start) and item.endswith(end)


def _codex_injected(item: str) -> bool:
    """Whether a user message's text item (trimmed) is context Codex injected."""
    lowered = item.lower()
    return any(_codex_marked(lowered, markers) for markers in _CODEX_INJECTED) or any(
        shape.fullmatch(item) for shape in _CODEX_INJECTED_WHOLE
    )


def _codex_message(payload: dict[str, Any], at: int | None, where: str) -> list[Turn]:
    """The turns of a message item: the assistant's text, or the user's words without
    the context Codex injected, then any shell command the user ran as a tool turn."""
    role = payload.get("role")
    if role not in ("user", "assistant"):
        return []
    words: list[str] = []
    ran: list[Turn] = []
    for text in _codex_texts(payload.get("content")):
        item = text.strip()
        if role == "user" and _CODEX_IMAGE.fullmatch(item):
            if not item.startswith("</"):
                words.append("[image]")
        elif role == "user" and _codex_marked(item.lower(), _CODEX_USER_SHELL):
            ran.append(Turn("tool", "tool", _clip(text), at, where))
        elif role == "assistant" or not _codex_injected(item):
            words.append(text)
    body = "\n".join(words).strip()
    return [Turn(role, role, body, at, where), *ran] if body else ran


def _parse_codex(text: str, lines: JsonLines | None = None) -> Parsed:
    items: list[Turn] = []
    events: list[Turn] = []
    project = ""
    started: int | None = None  # older rollouts time only the session, in their header
    for number, value in _need_lines(text, "Codex", lines):
        payload = value.get("payload")
        kind = value.get("type")
        if not isinstance(kind, str):
            kind = None  # no type of text: no item of any kind
        if not isinstance(payload, dict) and kind in _CODEX_ITEMS:
            payload, kind = value, "response_item"  # an older rollout's unwrapped item
        if not isinstance(payload, dict):
            if kind is None and "id" in value and started is None:
                started = epoch(value.get("timestamp"))
            continue
        at = epoch(value.get("timestamp"))
        at = started if at is None else at
        where = f"line {number}"
        ptype = payload.get("type")
        if kind == "session_meta":
            project = str(payload.get("cwd") or project)
        elif kind == "response_item" and ptype == "message":
            items.extend(_codex_message(payload, at, where))
        elif kind == "response_item" and ptype in ("function_call", "custom_tool_call"):
            arguments = payload.get("arguments", payload.get("input", ""))
            items.append(
                Turn(
                    "tool",
                    "tool",
                    _clip(f"[tool_use {payload.get('name', '?')}] {arguments}"),
                    at,
                    where,
                )
            )
        elif kind == "response_item" and ptype == "local_shell_call":
            action = json.dumps(payload.get("action", {}), ensure_ascii=False, sort_keys=True)
            items.append(Turn("tool", "tool", _clip(f"[tool_use shell] {action}"), at, where))
        elif kind == "response_item" and ptype in (
            "function_call_output",
            "custom_tool_call_output",
        ):
            output = payload.get("output", "")
            if not isinstance(output, str):
                output = json.dumps(output, ensure_ascii=False)
            items.append(Turn("tool", "tool", _clip(f"[tool_result] {output}"), at, where))
        elif kind == "event_msg" and ptype in ("user_message", "agent_message"):
            body = str(payload.get("message") or "").strip()
            if body:
                role = "user" if ptype == "user_message" else "assistant"
                events.append(Turn(role, role, body, at, where))
    # Response items are the full record; event messages repeat them for the UI and
    # are used only by older rollouts that have no message items.
    turns = items if any(t.role in ("user", "assistant") for t in items) else events
    if not turns:
        raise FormatError("no user or assistant messages in this Codex rollout")
    name = project.rstrip("/").rsplit("/", 1)[-1] if project else ""
    return Parsed("codex", (Conversation(tuple(turns)),), project=name)


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, dict):
        return ""
    kind = content.get("content_type")
    if kind in ("thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"):
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        return _chatgpt_parts(parts)
    return str(content.get("text") or "")


def _chatgpt_parts(parts: list[Any]) -> str:
    """The words of a message's parts: its strings and, in voice conversations, the
    `audio_transcription` objects' text; other objects (images, the recordings' asset
    pointers) are left out."""
    words = []
    for part in parts:
        if isinstance(part, dict) and part.get("content_type") == "audio_transcription":
            part = part.get("text")
        if isinstance(part, str):
            words.append(part)
    return "\n".join(words)


def _current_branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """Nodes from the root to `current` (the branch the user last saw). Nodes that are
    not objects are ignored."""
    if not isinstance(current, str) or not isinstance(mapping.get(current), dict):
        leaves = [
            node for node in mapping.values() if isinstance(node, dict) and not node.get("children")
        ]
        if not leaves:
            return []
        current = max(leaves, key=_created).get("id")
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id = current
    while (
        isinstance(node_id, str)
        and isinstance(mapping.get(node_id), dict)
        and (node_id not in seen)
    ):
        seen.add(node_id)
        node = mapping[node_id]
        path.append(node)
        node_id = node.get("parent")
    return path[::-1]


def _created(node: dict[str, Any]) -> float:
    """A node's message's creation time as a number (0 when it has none)."""
    message = node.get("message")
    when = message.get("create_time") if isinstance(message, dict) else None
    return epoch(when) or 0


def _chatgpt_conversation(data: dict[str, Any], index: int) -> Conversation:
    title = str(data.get("title") or data.get("id") or data.get("conversation_id") or f"#{index}")
    turns: list[Turn] = []
    if isinstance(data.get("mapping"), dict):
        for node in _current_branch(data["mapping"], data.get("current_node")):
            message = node.get("message")
            if not isinstance(message, dict):
                continue
            metadata = message.get("metadata") or {}
            if isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation"):
                continue
            author = message.get("author") or {}
            role = author.get("role") if isinstance(author, dict) else None
            body = _chatgpt_text(message).strip()
            if role not in ("user", "assistant", "tool") or not body:
                continue
            if role == "tool":
                body = _clip(f"[tool {author.get('name') or '?'}] {body}")
            recipient = message.get("recipient")
            if role == "assistant" and recipient not in (None, "all"):
                # A call of a tool (`python`, `browser`, `bio`, `dalle.text2im`, a canvas
                # `canmore.…`), written as a message to it: no words of the assistant.
                role, body = "tool", _clip(f"[tool_use {recipient}] {body}")
            where = f"conversation {title} message {message.get('id') or node.get('id')}"
            turns.append(Turn(role, role, body, epoch(message.get("create_time")), where))
    else:
        for number, item in enumerate(data.get("messages") or []):
            turns.extend(_plain_message(item, number, title))
    return Conversation(tuple(turns), title=title)


def _plain_message(item: Any, number: int, title: str) -> Iterable[Turn]:
    if not isinstance(item, dict):
        return
    role = item.get("role")
    content = item.get("content")
    if isinstance(content, dict):
        content = content.get("parts")
    if isinstance(content, list):
        content = _chatgpt_parts(content)
    if role in ("user", "human", "assistant") and isinstance(content, str) and content.strip():
        role = "user" if role in ("user", "human") else "assistant"
        where = f"conversation {title} message {number}" if title else f"message {number}"
        yield Turn(role, role, content.strip(), epoch(item.get("create_time")), where)


def _parse_chatgpt(text: str) -> Parsed:
    data = _json_document(text)
    if isinstance(data, list) and data and all(isinstance(i, dict) and "role" in i for i in data):
        turns = [t for n, item in enumerate(data) for t in _plain_message(item, n, "")]
        conversations = (Conversation(tuple(turns)),)
    elif isinstance(data, list):
        conversations = tuple(
            _chatgpt_conversation(item, n) for n, item in enumerate(data) if isinstance(item, dict)
        )
    elif isinstance(data, dict):
        conversations = (_chatgpt_conversation(data, 0),)
    else:
        raise FormatError("not a ChatGPT export (a JSON array of conversations)")
    conversations = tuple(c for c in conversations if c.turns)
    if not conversations:
        raise FormatError("no user or assistant messages in this ChatGPT export")
    return Parsed("chatgpt", conversations)


# Notices Slack posts as messages (joins, renames, pins, a deleted message's stand-in):
# nobody's words.
_SLACK_SKIPPED = frozenset(
    {
        "channel_join", "channel_leave", "channel_topic", "channel_purpose", "channel_name",
        "channel_archive", "channel_unarchive", "pinned_item", "tombstone", "bot_add",
        "bot_remove",
    }
)  # fmt: skip
# Slack's control sequences in a message's text (mrkdwn): `<@U123>` (a mention),
# `<#C123|name>` (a channel), `<!here>` (a special mention), `<https://…|label>` (a link),
# each with an optional `|label`. A `<`, `>` or `&` that was typed is escaped instead.
_SLACK_CONTROL = re.compile(r"<([@#!][^<>|]*|[A-Za-z][A-Za-z0-9+.-]*:[^<>|]*)(?:\|([^<>]*))?>")
_SLACK_EVERYONE = ("here", "channel", "everyone")
_SLACK_ESCAPES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


def _slack_attachments_text(item: dict[str, Any]) -> str:
    """The words of a message's `attachments` (integrations post with an empty `text`):
    each one's `pretext` and `text`, or its `fallback` (a plain-text stand-in for the
    rest) when it has neither."""
    attachments = item.get("attachments")
    pieces: list[str] = []
    for attachment in attachments if isinstance(attachments, list) else []:
        if not isinstance(attachment, dict):
            continue
        own = [_stripped(attachment.get(key)) for key in ("pretext", "text")]
        own = [piece for piece in own if piece] or [_stripped(attachment.get("fallback"))]
        pieces.extend(piece for piece in own if piece)
    return "\n".join(pieces)


def _slack_files_text(item: dict[str, Any]) -> str:
    """A `[file: title]` line for each file a message shares (by its title, else name)."""
    files = item.get("files")
    names = [
        _stripped(shared.get("title")) or _stripped(shared.get("name"))
        for shared in (files if isinstance(files, list) else [])
        if isinstance(shared, dict)
    ]
    return "\n".join(f"[file: {name}]" for name in names if name)


def _slack_text(text: str, names: dict[str, str]) -> str:
    """A message's mrkdwn as it reads in Slack: a mention as `@Name` (`names`: user id to
    name, from the file's messages; the id when the file names nobody so), a channel as
    `#name`, `<!here>` as `@here`, a link as `label (url)` or its URL, and `&lt;`,
    `&gt;`, `&amp;` as the characters typed."""

    def shown(found: re.Match[str]) -> str:
        target, label = found.group(1), found.group(2)
        if target.startswith("@"):
            return "@" + (label or names.get(target[1:]) or target[1:])
        if target.startswith("#"):
            return "#" + (label or target[1:])
        if target.startswith("!"):
            special = target[1:].split("^", 1)[0]
            return "@" + special if special in _SLACK_EVERYONE or not label else label
        return f"{label} ({target})" if label and label != target else target

    text = _SLACK_CONTROL.sub(shown, text)
    for escaped, typed in _SLACK_ESCAPES:
        text = text.replace(escaped, typed)
    return text


def _slack_speaker(item: dict[str, Any]) -> str:
    """Who posted a message: the profile's name, else the user or bot name, else the id."""
    profile = item.get("user_profile") if isinstance(item.get("user_profile"), dict) else {}
    return str(
        profile.get("real_name")
        or profile.get("display_name")
        or item.get("user_name")
        or item.get("username")
        or item.get("user")
        or "unknown"
    )


def _stripped(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _parse_slack(text: str) -> Parsed:
    data = _json_document(text)
    if not isinstance(data, list):
        raise FormatError("not a Slack export (a JSON array of messages)")
    messages = [i for i in data if isinstance(i, dict) and i.get("type") == "message"]
    names = {  # the users the file names, for their mentions
        str(item["user"]): _slack_speaker(item)
        for item in messages
        if isinstance(item.get("user"), str) and isinstance(item.get("user_profile"), dict)
    }
    turns: list[Turn] = []
    for item in messages:
        subtype = item.get("subtype")
        if isinstance(subtype, str) and subtype in _SLACK_SKIPPED:
            continue
        said = str(item.get("text") or "").strip() or _slack_attachments_text(item)
        body = _slack_text(said, names).strip() or _slack_files_text(item)
        if not body:
            continue
        speaker = _slack_speaker(item)
        ts = item.get("ts")
        where = f"ts {ts}" if ts else ""
        turns.append(Turn("user", speaker, body, epoch(ts), where))
    if not turns:
        raise FormatError("no messages in this Slack export")
    return Parsed("slack", (Conversation(tuple(turns), named_speakers=True),))
