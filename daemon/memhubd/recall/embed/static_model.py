"""The default embedder: a static (model2vec-format) token-embedding table, mean-pooled.

Runs on numpy + tokenizers + safetensors only: no model2vec, torch or huggingface-hub at run
time, and never a download. The vendored model under `model/` is distilled from
all-MiniLM-L6-v2 by tools/distill_embedder.py; any local folder of the same format loads too.
"""

from __future__ import annotations

import hashlib
import itertools
import json
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
# Texts per tokenizer call, and texts per padded gather: the gathered block is at most
# GROUP x MAX_TOKENS x dimension floats (16 MB at 256-d).
POOL_CHUNK = 256
GROUP = 32


@dataclass(frozen=True, slots=True)
class _Tables:
    tokenizer: object  # tokenizers.Tokenizer; typed loosely so the import stays lazy
    # One row per token id (int8 or float32) plus a last all-zero row for padding; token
    # weights already applied and the unknown token's row zeroed (model2vec drops unknown
    # tokens).
    vectors: np.ndarray
    pad_id: int


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
        for start in range(0, len(texts), POOL_CHUNK):
            chunk = texts[start : start + POOL_CHUNK]
            out[start : start + len(chunk)] = _pool(tables, chunk, self.dimension)
        return out


def _pool(tables: _Tables, texts: Sequence[str], dimension: int) -> np.ndarray:
    """Tokenize all texts in one call, then sum token rows per text, in padded groups.

    Texts are sorted by token count and gathered GROUP at a time into a rectangular id
    matrix padded with a zero row, so one `vectors[matrix].sum(axis=1)` does a whole group
    with little padding. (`np.add.reduceat` over ragged rows is several times slower.)
    """
    encodings = tables.tokenizer.encode_batch_fast(  # type: ignore[attr-defined]
        [text[:MAX_CHARS] for text in texts], add_special_tokens=False
    )
    id_lists = [
        [] if is_blank(text) else encoding.ids[:MAX_TOKENS]
        for text, encoding in zip(texts, encodings, strict=True)
    ]
    counts = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
    order = np.argsort(counts, kind="stable")
    order = order[counts[order] > 0]
    out = np.zeros((len(texts), dimension), dtype=np.float32)
    for start in range(0, order.size, GROUP):
        rows = order[start : start + GROUP]
        lengths = counts[rows]
        width = int(lengths[-1])  # sorted ascending: the last row is the longest
        matrix = np.full((rows.size, width), tables.pad_id, dtype=np.int64)
        matrix[np.arange(width) < lengths[:, None]] = np.fromiter(
            itertools.chain.from_iterable(id_lists[i] for i in rows),
            dtype=np.int64,
            count=int(lengths.sum()),
        )
        # A sum, not a mean: they differ by a positive factor, which normalising removes.
        out[rows] = tables.vectors[matrix].sum(axis=1, dtype=np.float32)
    return normalise_rows(out)


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
    return _Tables(tokenizer=tokenizer, vectors=vectors, pad_id=vectors.shape[0] - 1)


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
