"""The `.mem` language: tokenizer, parser, syntax tree, parse errors and source writer.

Plain synchronous Python over plain data; nothing here knows about types,
workspaces or servers.
"""

from memhubd.lang.errors import ParseError
from memhubd.lang.lexer import Token, tokenize
from memhubd.lang.parser import MAX_DEPTH, as_read, parse_file, parse_precise, parse_text
from memhubd.lang.tree import Document, Position, RawDeclaration, Value
from memhubd.lang.writer import write_declaration, write_document, write_value

__all__ = [
    "MAX_DEPTH",
    "Document",
    "ParseError",
    "Position",
    "RawDeclaration",
    "Token",
    "Value",
    "as_read",
    "parse_file",
    "parse_precise",
    "parse_text",
    "tokenize",
    "write_declaration",
    "write_document",
    "write_value",
]
