"""Ingest: formats, chunking, rooms and the per-source lock, ending in store writes."""

from memhubd.recall.ingest.chunk import Chunk, chunk
from memhubd.recall.ingest.formats import FORMATS, FormatError, Parsed, Turn, detect, parse
from memhubd.recall.ingest.lock import LockTimeout, SourceLock
from memhubd.recall.ingest.pipeline import (
    NEAR_DUPLICATE,
    Embeds,
    IngestOptions,
    Ingestor,
    SourceReport,
    record_of,
)

__all__ = [
    "FORMATS",
    "NEAR_DUPLICATE",
    "Chunk",
    "Embeds",
    "FormatError",
    "IngestOptions",
    "Ingestor",
    "LockTimeout",
    "Parsed",
    "SourceLock",
    "SourceReport",
    "Turn",
    "chunk",
    "detect",
    "parse",
    "record_of",
]
