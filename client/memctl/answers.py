"""What a command takes from the daemon's answer, and an answer it cannot take it from.

A success whose JSON is of another shape than the command reads (a list or null where an
object belongs, a key missing, a field of another type: a proxy, an older or newer
daemon, a bug) becomes `UnexpectedAnswer` here, before anything of it is printed. Pure:
nothing here talks to the daemon or prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from memctl.client import UnexpectedAnswer

TYPE_CHECKING = False  # typing itself is not imported: every command would pay for it
if TYPE_CHECKING:
    from typing import Any

# What reading a payload of another shape than expected raises: a list or null indexed
# as an object, a key missing, a number formatted from a string, ...
SHAPE_ERRORS = (LookupError, TypeError, AttributeError, ValueError, ArithmeticError)


def from_answer(payload: Any, read: Callable[[Any], Any]) -> Any:
    """`read(payload)`: what a command takes from the daemon's answer. A payload it cannot
    be taken from is UnexpectedAnswer, told in one line as every failure is: never a
    traceback, nor a second JSON document after the answer."""
    try:
        return read(payload)
    except SHAPE_ERRORS as error:
        raise UnexpectedAnswer(_what_is_wrong(payload, error)) from error


def rendered(payload: Any, as_text: Callable[[Any], Any]) -> str:
    """`as_text(payload)`, which must be text (see `from_answer`)."""
    text = from_answer(payload, as_text)
    if not isinstance(text, str):
        raise UnexpectedAnswer(f"expected text, got {json_kind(text)}")
    return text


def an_object(payload: Any) -> Any:
    """`payload` when it is a JSON object, for `from_answer`."""
    if not isinstance(payload, dict):
        raise TypeError(f"expected an object, not {json_kind(payload)}")
    return payload


def json_kind(value: Any) -> str:
    """What a JSON value is, in words: `null`, `a list`, `a string`, ..."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    kinds = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}
    return kinds.get(type(value), type(value).__name__)


def _what_is_wrong(payload: Any, error: Exception) -> str:
    """What `error`, raised reading `payload`, says is wrong with it, in a few words."""
    if not isinstance(payload, dict | str):  # a text answer is read as text
        return f"expected a JSON object, got {json_kind(payload)}"
    if isinstance(error, KeyError) and error.args:
        return f"{error.args[0]!r} is missing"
    return f"a field of another type or shape ({error})"
