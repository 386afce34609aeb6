"""Posting lists of keys common to many files, as codes that stay valid across edits.

A code is `serial << LOCAL_BITS | local`: the serial an index lineage gave the segment
that holds the posting, and the declaration's local ordinal in it. Slots move when an
earlier file grows or shrinks; serials do not, so a key's codes carry over edits and its
bitmap is a few vectorised calls instead of a probe of every file. Nothing here knows
what a key means or which segments are current: callers pass the serials' slots.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import chain, repeat
from typing import Any

import numpy as np

from memhubd.index.bitmaps import BYTE_BITS

LOCAL_BITS = 12
LOCAL_MASK = (1 << LOCAL_BITS) - 1
SERIAL_LIMIT = 1 << (32 - LOCAL_BITS)
EMPTY = np.zeros(0, np.uint32)
# Below this many postings, setting bits byte by byte beats a bit per slot + packbits.
_SPARSE = 8192


def codable(segment: Any, serial: int) -> bool:
    """Whether the postings of `segment` with `serial` fit in codes (files of at most
    4,096 declarations, serials below a million); others are listed as holders and
    copied row by row."""
    return len(segment) <= LOCAL_MASK + 1 and serial < SERIAL_LIMIT


def row_codes(row: bytes, serial: int) -> np.ndarray:
    """The codes of one posting row of the segment with `serial`."""
    local = np.flatnonzero(np.unpackbits(np.frombuffer(row, np.uint8)))
    return local.astype(np.uint32) | np.uint32(serial << LOCAL_BITS)


def fresh_codes(
    table: str, segments: Sequence[Any], serials: Iterable[int], keys: Collection[str]
) -> dict[str, np.ndarray]:
    """key -> codes of its postings in `table` over the codable `segments`.

    Tables of one row width are unpacked together, a chunk of rows at a time, and every
    posting is sorted once: no Python step per posting, one per file and key at most.
    """
    if not keys:
        return {}
    number = {key: n for n, key in enumerate(keys)}
    by_width: dict[int, list[tuple[int, Any]]] = {}
    for segment, serial in zip(segments, serials, strict=True):
        postings = getattr(segment, table)
        if postings.keys and codable(segment, serial):
            by_width.setdefault(postings.width, []).append((serial, postings))
    parts = [
        _chunk_codes(chunk, width, number)
        for width, group in by_width.items()
        for chunk in _chunks(group)
    ]
    if not parts:
        return dict.fromkeys(keys, EMPTY)
    merged = np.concatenate(parts)
    del parts
    merged.sort()
    counts = np.bincount((merged >> np.uint64(32)).astype(np.intp), minlength=len(number))
    codes = (merged & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    del merged
    ends = np.cumsum(counts)
    starts = ends - counts
    # Views of one array, not a copy each: thousands of small allocations scattered
    # over the space the sort's temporaries freed would keep all of it resident.
    return {key: codes[starts[n] : ends[n]] for key, n in number.items()}


_CHUNK_ROWS = 1 << 17  # rows unpacked at once: 8 bytes a row and bit, so ~10 MB at width 7


def _chunks(group: list[tuple[int, Any]]) -> Iterator[list[tuple[int, Any]]]:
    chunk: list[tuple[int, Any]] = []
    rows = 0
    for item in group:
        chunk.append(item)
        rows += len(item[1].keys)
        if rows >= _CHUNK_ROWS:
            yield chunk
            chunk, rows = [], 0
    if chunk:
        yield chunk


def _chunk_codes(chunk: list[tuple[int, Any]], width: int, number: dict[str, int]) -> np.ndarray:
    """(key number << 32 | code) of the postings of keys in `number`, for tables of one width."""
    keys = list(chain.from_iterable(postings.keys for _, postings in chunk))
    ids = np.fromiter(map(number.get, keys, repeat(-1)), np.int64, len(keys))
    picked = np.flatnonzero(ids >= 0)
    serial = np.repeat(
        np.array([serial << LOCAL_BITS for serial, _ in chunk], np.uint64),
        [len(postings.keys) for _, postings in chunk],
    )
    data = b"".join(postings.rows for _, postings in chunk)
    flat = np.frombuffer(data, np.uint8).reshape(len(keys), width)[picked].ravel()
    at = np.flatnonzero(flat)  # scanning bytes, not bits: most are empty
    byte, bit = np.nonzero(BYTE_BITS[flat[at]])
    at = at[byte]
    row = at // width
    local = (at - row * width) * 8 + bit
    return (  # type: ignore[no-any-return]
        ids[picked][row].astype(np.uint64) << np.uint64(32)
        | serial[picked][row]
        | local.astype(np.uint64)
    )


def live_codes(codes: np.ndarray, live: np.ndarray) -> np.ndarray:
    """`codes` without those of serials not `live` (a bool per serial)."""
    if not codes.size:
        return codes
    serials = codes >> np.uint32(LOCAL_BITS)
    return codes[live[serials]]  # type: ignore[no-any-return]


def slots_of(codes: np.ndarray, slot_of_serial: np.ndarray) -> np.ndarray:
    """The slots (int64, in code order) of the codes whose serial has a slot
    (`slot_of_serial`: a segment's first slot, or -1)."""
    at = slot_of_serial[codes >> np.uint32(LOCAL_BITS)]
    live = at >= 0
    return at[live] + (codes[live] & np.uint32(LOCAL_MASK))  # type: ignore[no-any-return]


def bitmap_bytes(codes: np.ndarray, slot_of_serial: np.ndarray, nbytes: int) -> np.ndarray:
    """The big-endian bitmap bytes (bit 0x80 of byte 0 is slot 0) of the codes whose
    serial has a slot (`slot_of_serial`: a segment's first slot, or -1)."""
    if not codes.size:
        return np.zeros(nbytes, np.uint8)
    slots = slots_of(codes, slot_of_serial)
    if slots.size < _SPARSE:
        out = np.zeros(nbytes, np.uint8)
        bits = (np.int64(0x80) >> (slots & 7)).astype(np.uint8)
        np.bitwise_or.at(out, slots >> 3, bits)
        return out
    flags = np.zeros(nbytes * 8, np.uint8)
    flags[slots] = 1
    return np.packbits(flags)
