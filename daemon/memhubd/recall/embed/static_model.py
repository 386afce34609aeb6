"""The default embedder: a static (model2vec-format) token-embedding table, mean-pooled.

Runs on numpy + tokenizers + safetensors only: no model2vec, torch or huggingface-hub at run
time, and never a download. The vendored model under `model/` is distilled from
all-MiniLM-L6-v2 by tools/distill_embedder.py; any local folder of the same format loads too.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .base import EmbedderError, LoadOnce, check_texts, is_blank, normalise_rows

VENDORED_DIR = Path(__file__).parent / "model"
VENDORED_NAME = "memhub-static-minilm-256-int8"
# SHA256SUMS, written by tools/distill_embedder.py, lists the vendored files. A mismatch means
# a damaged install or an edit that bypassed the script; either would silently change vectors.
SUMS_FILE = "SHA256SUMS"
# Mean pooling over the first MAX_TOKENS tokens, as model2vec does by default. Cutting the text
# first bounds the tokenizer's work on huge inputs; 8 characters a token leaves room for
# 512 tokens of ordinary prose.
MAX_TOKENS = 512
MAX_CHARS = MAX_TOKENS * 8
# Texts tokenized together (their ids are held at once: ~2 MB for 4,096 chat exchanges),
# texts per call of the tokenizer when it reads whole texts, and texts per padded gather:
# the gathered block is at most GROUP x MAX_TOKENS x dimension floats (16 MB at 256-d).
TOKENIZE_CHUNK = 4096
POOL_CHUNK = 256
GROUP = 32
# Token ids of whitespace-free segments are remembered across calls: most segments of a
# text were seen before (words follow Zipf's law), and a dict lookup costs a small part of
# the tokenizer's per-text work (encoding 4,096 chat exchanges whole took 8x longer). The
# memo is emptied when it would pass this many entries (about 15 MB of words), or this
# many bytes: a segment may be a whole 4,096-character cut of base64 or a minified line,
# with thousands of ids.
SEGMENT_CACHE = 100_000
SEGMENT_CACHE_BYTES = 32 * 1024 * 1024
_SEGMENT_ENTRY = 64  # a memo entry's share of its dict, roughly
# Where a text is cut into segments. Each of these is whitespace to the normalizers and
# pre-tokenizers named below, which treat the two sides of whitespace independently, so a
# text's ids are exactly its segments' ids joined (tests/unit/recall/test_embedders.py
# checks it on every fixture). Any other tokenizer reads each text whole.
_SEGMENT = re.compile(r"[^ \t\n\r]+")
_SEGMENTING_NORMALIZERS = (None, "BertNormalizer")
_SEGMENTING_PRE_TOKENIZERS = ("BertPreTokenizer", "Whitespace", "WhitespaceSplit")
_ID_TYPE = np.dtype("<u4")
_ID_BYTES = _ID_TYPE.itemsize


@dataclass(frozen=True, slots=True)
class _Tables:
    tokenizer: object  # tokenizers.Tokenizer; typed loosely so the import stays lazy
    # One row per token id (int8 or float32) plus a last all-zero row for padding; token
    # weights already applied and the unknown token's row zeroed (model2vec drops unknown
    # tokens).
    vectors: np.ndarray
    pad_id: int
    # The memo of segments' ids; None when the tokenizer must read each text whole.
    segments: _SegmentIds | None


class _SegmentIds:
    """The tokenizer's ids for whitespace-free segments, remembered (bounded).

    Concurrent embed calls share it without a lock: entries are only ever added, and a
    full memo is replaced by a new one while callers keep the one they started with.
    """

    def __init__(
        self, tokenizer: object, limit: int = SEGMENT_CACHE, max_bytes: int = SEGMENT_CACHE_BYTES
    ) -> None:
        self._tokenizer = tokenizer
        self._limit = limit
        self._max_bytes = max_bytes
        self._ids: dict[str, bytes] = {}
        self._bytes = 0  # what `_ids` holds, as allocated (approximate under concurrency)

    def ids(self, texts: Sequence[str]) -> list[bytes]:
        """Each text's token ids (little-endian uint32 bytes), exactly as the tokenizer
        gives them for the whole text."""
        known = self._ids
        segmented = [_SEGMENT.findall(text) for text in texts]
        # Set operations and map() keep the per-segment loops in C.
        wanted = set().union(*segmented)
        missing = list(wanted.difference(known))
        if missing:
            encodings = self._tokenizer.encode_batch_fast(  # type: ignore[attr-defined]
                missing, add_special_tokens=False
            )
            fresh = dict(zip(missing, map(_as_bytes, (e.ids for e in encodings)), strict=True))
            size, used = _memo_bytes(fresh), self._bytes
            if len(known) + len(fresh) > self._limit or used + size > self._max_bytes:
                # Start over with the segments this call reads (callers already reading
                # the old memo keep it).
                known = {segment: known[segment] for segment in wanted.difference(fresh)}
                used = _memo_bytes(known)
                if len(known) + len(fresh) > self._limit or used + size > self._max_bytes:
                    # This call alone reads more than the memo may hold: none of it is kept.
                    known.update(fresh)
                    return [b"".join(map(known.__getitem__, s)) for s in segmented]
            known.update(fresh)
            self._ids, self._bytes = known, used + size
        return [b"".join(map(known.__getitem__, segments)) for segments in segmented]


def _memo_bytes(entries: dict[str, bytes]) -> int:
    """What `entries` hold in a memo, as allocated."""
    held = sum(map(sys.getsizeof, entries)) + sum(map(sys.getsizeof, entries.values()))
    return held + _SEGMENT_ENTRY * len(entries)


class StaticEmbedder:
    """Mean of the token vectors of a static model, L2-normalised.

    Construction reads only config.json; the tables load on first use, once, under a lock,
    so a daemon that never embeds pays nothing and concurrent first calls load once.
    """

    def __init__(self, folder: Path, name: str, dimension: int = 0, *, verify: bool = False):
        self.folder = folder
        self.name = name
        config = _read_config(folder)
        model_dimension = config.get("hidden_dim")
        if not isinstance(model_dimension, int) or model_dimension <= 0:
            raise EmbedderError(f"{folder / 'config.json'} has no positive integer hidden_dim")
        if dimension and dimension != model_dimension:
            raise EmbedderError(
                f"static model {name} has dimension {model_dimension}, settings say {dimension}"
            )
        if config.get("pooling", "mean") != "mean":
            raise EmbedderError(f"{folder / 'config.json'}: only mean pooling is supported")
        self.dimension: int = model_dimension
        # A lambda, so the module-level loader is looked up at load time.
        self._tables = LoadOnce(lambda: _load_tables(folder, model_dimension, verify))

    def __repr__(self) -> str:
        return f"StaticEmbedder(name={self.name!r}, dimension={self.dimension})"

    def load(self) -> None:
        """Load the tables now instead of on the first embed (e.g. at daemon start)."""
        self._tables.get()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        check_texts(texts)
        tables = self._tables.get()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), TOKENIZE_CHUNK):
            ids, counts = _token_ids(tables, texts[start : start + TOKENIZE_CHUNK])
            out[start : start + len(counts)] = _pool(tables, ids, counts, self.dimension)
        return out


def _token_ids(tables: _Tables, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The first MAX_TOKENS token ids of every text, end to end, and each text's count."""
    cut = [text[:MAX_CHARS] for text in texts]
    if tables.segments is not None:
        encoded = tables.segments.ids(cut)
    else:
        encoded = []
        for start in range(0, len(cut), POOL_CHUNK):
            encodings = tables.tokenizer.encode_batch_fast(  # type: ignore[attr-defined]
                cut[start : start + POOL_CHUNK], add_special_tokens=False
            )
            encoded += [_as_bytes(encoding.ids) for encoding in encodings]
    limit = MAX_TOKENS * _ID_BYTES
    encoded = [
        b"" if is_blank(text) else ids[:limit] for text, ids in zip(texts, encoded, strict=True)
    ]
    counts = np.fromiter(map(len, encoded), dtype=np.intp, count=len(encoded)) // _ID_BYTES
    return np.frombuffer(b"".join(encoded), dtype=_ID_TYPE), counts


def _pool(tables: _Tables, ids: np.ndarray, counts: np.ndarray, dimension: int) -> np.ndarray:
    """Sum each text's token rows, in padded groups, and normalise.

    Texts are sorted by token count and gathered GROUP at a time into a rectangular id
    matrix padded with a zero row, so one `vectors[matrix].sum(axis=1)` does a whole group
    with little padding. (`np.add.reduceat` over ragged rows is several times slower.)
    """
    starts = np.cumsum(counts) - counts
    # One more id, the padding row, that every padded cell of a matrix points to.
    ids = np.append(ids, np.array([tables.pad_id], dtype=ids.dtype))
    order = np.argsort(counts, kind="stable")
    order = order[counts[order] > 0]
    out = np.zeros((len(counts), dimension), dtype=np.float32)
    for start in range(0, order.size, GROUP):
        rows = order[start : start + GROUP]
        lengths = counts[rows]
        width = int(lengths[-1])  # sorted ascending: the last row is the longest
        columns = np.arange(width)
        positions = np.where(columns < lengths[:, None], starts[rows][:, None] + columns, -1)
        # A sum, not a mean: they differ by a positive factor, which normalising removes.
        out[rows] = tables.vectors[ids[positions]].sum(axis=1, dtype=np.float32)
    return normalise_rows(out)


def _as_bytes(ids: Sequence[int]) -> bytes:
    return np.asarray(ids, dtype=_ID_TYPE).tobytes()


def _read_config(folder: Path) -> dict[str, object]:
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EmbedderError(f"no static model at {folder}: {path.name} is missing") from None
    except (OSError, ValueError) as exc:
        raise EmbedderError(f"cannot read {path}: {exc}") from exc
    if not isinstance(config, dict):
        raise EmbedderError(f"{path} is not a JSON object")
    return config


def _load_tables(folder: Path, dimension: int, verify: bool) -> _Tables:
    # Imported here so that importing the package (e.g. to read settings) stays cheap.
    import safetensors.numpy
    import tokenizers

    if verify:
        _verify_vendored(folder)
    try:
        tensors = safetensors.numpy.load_file(str(folder / "model.safetensors"))
        tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception as exc:  # the libraries raise their own assorted types
        raise EmbedderError(f"cannot load the static model in {folder}: {exc}") from exc
    vectors = _token_vectors(tensors, folder)
    if vectors.shape[1] != dimension:
        raise EmbedderError(
            f"{folder}: model.safetensors has dimension {vectors.shape[1]}, "
            f"config.json says {dimension}"
        )
    if vectors.shape[0] < tokenizer.get_vocab_size():
        raise EmbedderError(
            f"{folder}: {vectors.shape[0]} token vectors for a vocabulary of "
            f"{tokenizer.get_vocab_size()}"
        )
    tokenizer.no_padding()
    tokenizer.no_truncation()
    unk_id = _unk_id(tokenizer)
    if unk_id is not None:
        vectors[unk_id] = 0
    vectors = np.concatenate([vectors, np.zeros((1, vectors.shape[1]), vectors.dtype)])
    segments = _SegmentIds(tokenizer) if _reads_segments(tokenizer) else None
    return _Tables(tokenizer, vectors, pad_id=vectors.shape[0] - 1, segments=segments)


def _reads_segments(tokenizer: object) -> bool:
    """True when the tokenizer's ids for a text are its whitespace-free segments' ids
    joined: a normalizer and pre-tokenizer that never join across whitespace, and added
    tokens without whitespace that strip none."""
    config = json.loads(tokenizer.to_str())  # type: ignore[attr-defined]
    normalizer = (config.get("normalizer") or {}).get("type")
    pre_tokenizer = (config.get("pre_tokenizer") or {}).get("type")
    added = config.get("added_tokens") or []
    return (
        normalizer in _SEGMENTING_NORMALIZERS
        and pre_tokenizer in _SEGMENTING_PRE_TOKENIZERS
        and all(
            not token.get("lstrip")
            and not token.get("rstrip")
            and _SEGMENT.fullmatch(str(token.get("content", ""))) is not None
            for token in added
        )
    )


def _token_vectors(tensors: dict[str, np.ndarray], folder: Path) -> np.ndarray:
    """One row per token id, with model2vec's optional weights and mapping applied.

    An int8 table without weights stays int8 (a quarter of the memory, and a faster gather);
    sums of int8 rows are exact in float32. Anything else becomes float32.
    """
    unknown = set(tensors) - {"embeddings", "weights", "mapping"}
    if "embeddings" not in tensors or unknown:
        raise EmbedderError(
            f"{folder}/model.safetensors: expected tensors embeddings[, weights, mapping], "
            f"found {sorted(tensors)}"
        )
    vectors = tensors["embeddings"]
    if vectors.ndim != 2:
        raise EmbedderError(f"{folder}/model.safetensors: embeddings must be 2-D")
    if not (vectors.dtype == np.int8 and "weights" not in tensors):
        vectors = vectors.astype(np.float32)
    # model2vec's quantised formats: "mapping" maps a token id to a shared row, "weights"
    # scales each token's row. Folding both into one table keeps the hot path a gather.
    if "mapping" in tensors:
        vectors = vectors[tensors["mapping"].astype(np.int64)]
    if "weights" in tensors:
        vectors = vectors * tensors["weights"].astype(np.float32)[:, None]
    return np.array(vectors, order="C")  # a private, writable copy


def _unk_id(tokenizer: object) -> int | None:
    """The unknown-token id, which model2vec drops before pooling (it carries no meaning)."""
    config = json.loads(tokenizer.to_str())  # type: ignore[attr-defined]
    unk = (config.get("model") or {}).get("unk_token")
    if not isinstance(unk, str):
        return None
    return tokenizer.token_to_id(unk)  # type: ignore[attr-defined]


def _verify_vendored(folder: Path) -> None:
    try:
        lines = (folder / SUMS_FILE).read_text(encoding="utf-8").splitlines()
        sums = {}
        for line in lines:
            digest, _, filename = line.partition("  ")
            sums[filename.strip()] = digest.strip()
        for filename in ("model.safetensors", "tokenizer.json", "config.json"):
            digest = hashlib.sha256((folder / filename).read_bytes()).hexdigest()
            if sums.get(filename) != digest:
                raise EmbedderError(
                    f"vendored embedding model file {folder / filename} does not match "
                    f"{SUMS_FILE}; reinstall memhub or rerun tools/distill_embedder.py"
                )
    except OSError as exc:
        raise EmbedderError(f"vendored embedding model is incomplete: {exc}") from exc
