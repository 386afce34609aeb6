"""Posting lists of keys common to many files, as codes that stay valid across edits.

A code is `serial << LOCAL_BITS | local`: the serial an index lineage gave the segment
that holds the posting, and the declaration's local ordinal in it. Slots move when an
earlier file grows or shrinks; serials do not, so a key's codes carry over edits and its
bitmap is a few vectorised calls instead of a probe of every file. Nothing here knows
what a key means or which segments are current: callers pass the serials' slots.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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
    table: str,
    segments: Sequence[Any],
    serials: Iterable[int],
    numbered: Sequence[np.ndarray],
    keys: Sequence[str],
) -> dict[str, np.ndarray]:
    """key -> codes of its postings in `table` over the codable `segments`, for `keys`.

    `numbered` gives, per segment, the position in `keys` of each of its rows' keys (in
    row order; -1 for a key not asked for), so no key is looked up here. Tables of one
    row width are unpacked together, a chunk of rows at a time, and the postings are
    grouped by key once: no Python step per posting, one per file at most.
    """
    if not keys:
        return {}
    by_width: dict[int, list[tuple[int, Any, np.ndarray]]] = {}
    for segment, serial, numbers in zip(segments, serials, numbered, strict=True):
        postings = getattr(segment, table)
        if len(numbers) and codable(segment, serial):
            by_width.setdefault(postings.width, []).append((serial, postings, numbers))
    parts = [
        _chunk_codes(chunk, width) for width, group in by_width.items() for chunk in _chunks(group)
    ]
    if not parts:
        return dict.fromkeys(keys, EMPTY)
    # Grouped by key, not sorted by code: nothing reads a key's codes in order (they
    # are scattered into bitmaps, or their slots sorted), so a stable partition by key
    # does, a radix sort in O(postings) while the keys' positions fit in 16 bits.
    small = len(keys) <= 1 << 16
    numbers = np.concatenate([n.astype(np.uint16) if small else n for n, _ in parts])
    codes = np.concatenate([c for _, c in parts])
    del parts
    order = np.argsort(numbers, kind="stable")
    counts = np.bincount(numbers, minlength=len(keys))
    del numbers
    codes = codes[order]
    del order
    ends = np.cumsum(counts).tolist()
    starts = [0, *ends[:-1]]
    # Views of one array, not a copy each: thousands of small allocations scattered
    # over the space the sort's temporaries freed would keep all of it resident.
    return {key: codes[start:end] for key, start, end in zip(keys, starts, ends, strict=True)}


_CHUNK_ROWS = 1 << 17  # rows unpacked at once: 8 bytes a row and bit, so ~10 MB at width 7


def _chunks(
    group: list[tuple[int, Any, np.ndarray]],
) -> Iterator[list[tuple[int, Any, np.ndarray]]]:
    chunk: list[tuple[int, Any, np.ndarray]] = []
    rows = 0
    for item in group:
        chunk.append(item)
        rows += len(item[2])
        if rows >= _CHUNK_ROWS:
            yield chunk
            chunk, rows = [], 0
    if chunk:
        yield chunk


def _chunk_codes(
    chunk: list[tuple[int, Any, np.ndarray]], width: int
) -> tuple[np.ndarray, np.ndarray]:
    """(key positions, codes) of the postings of wanted keys, for tables of one width."""
    ids = np.concatenate([numbers for _, _, numbers in chunk])
    picked = np.flatnonzero(ids >= 0)
    serial = np.repeat(
        np.array([serial << LOCAL_BITS for serial, _, _ in chunk], np.uint32),
        [len(numbers) for _, _, numbers in chunk],
    )
    data = b"".join(postings.rows for _, postings, _ in chunk)
    flat = np.frombuffer(data, np.uint8).reshape(len(ids), width)[picked].ravel()
    at = np.flatnonzero(flat)  # scanning bytes, not bits: most are empty
    byte, bit = np.nonzero(BYTE_BITS[flat[at]])
    at = at[byte]
    row = at // width
    local = (at - row * width) * 8 + bit
    return ids[picked][row], serial[picked][row] | local.astype(np.uint32)


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
