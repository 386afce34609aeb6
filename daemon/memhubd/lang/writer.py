"""Source writer: renders declarations back to canonical `.mem` text.

For every declaration the parser accepts, `parse_text(write_declaration(d))`
gives back the same type, name and fields. Approvals use it to write memory.
"""

from __future__ import annotations

from typing import Any

from memhubd.lang.errors import ParseError
from memhubd.lang.lexer import ATOM, tokenize
from memhubd.lang.tree import Document, RawDeclaration

_INDENT = "  "


def _is_bare(text: str) -> bool:
    """True when `text` lexes back as exactly one atom with the same value.

    A trailing probe atom makes sure the text does not swallow what follows it
    (an unbalanced call-form group would).
    """
    if not text or text in ("module", "use"):
        return False
    try:
        tokens = tokenize(text + " probe")
    except ParseError:
        return False
    return (
        len(tokens) == 2
        and tokens[0].kind == ATOM
        and tokens[0].value == text
        and tokens[1].value == "probe"
    )


def quote(text: str) -> str:
    """A double-quoted string literal that the lexer decodes back to `text`."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return f'"{escaped}"'


def write_value(value: Any) -> str:
    """A field value (string, list) in `.mem` syntax, on one line."""
    if isinstance(value, list):
        return "[" + ", ".join(write_value(item) for item in value) + "]"
    text = str(value)
    return text if _is_bare(text) else quote(text)


def _write_block(fields: dict[str, Any], depth: int, out: list[str]) -> None:
    pad = _INDENT * depth
    for key, value in fields.items():
        if isinstance(value, dict):
            out.append(f"{pad}{key} {{")
            _write_block(value, depth + 1, out)
            out.append(f"{pad}}}")
        else:
            out.append(f"{pad}{key}: {write_value(value)}")


def write_declaration(declaration: RawDeclaration | Any) -> str:
    """Canonical text of one declaration, ending with a newline.

    Type, name and keys are atoms and are written as they are; values are bare
    when that lexes back unchanged, quoted otherwise.
    """
    out = [f"{declaration.kind} {declaration.name} {{"]
    _write_block(declaration.fields, 1, out)
    out.append("}")
    return "\n".join(out) + "\n"


def write_document(document: Document) -> str:
    """Canonical text of a whole document: module, uses, then the declarations."""
    parts: list[str] = []
    if document.module is not None:
        parts.append(f"module {document.module}\n")
    parts.extend(f"use {symbol}\n" for symbol in document.uses)
    for declaration in document.declarations:
        if parts:
            parts.append("\n")
        parts.append(write_declaration(declaration))
    return "".join(parts)
