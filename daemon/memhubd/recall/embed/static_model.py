"""The default embedder: a static (model2vec-format) token-embedding table, mean-pooled.

Runs on numpy + tokenizers + safetensors only: no model2vec, torch or huggingface-hub at run
time, and never a download. The vendored model under `model/` is distilled from
all-MiniLM-L6-v2 by tools/distill_embedder.py; any local folder of the same format loads too.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .base import EmbedderError, check_texts, is_blank, normalise_rows

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
# Texts pooled per numpy pass: bounds the gathered (tokens x dimension) block to a few MB.
POOL_CHUNK = 256


@dataclass(frozen=True, slots=True)
class _Tables:
    tokenizer: object  # tokenizers.Tokenizer; typed loosely so the import stays lazy
    vectors: np.ndarray  # (vocabulary, dimension) float32, token weights already applied
    unk_id: int | None


class StaticEmbedder:
    """Mean of the token vectors of a static model, L2-normalised.

    Construction reads only config.json; the tables load on first use, once, under a lock,
    so a daemon that never embeds pays nothing and concurrent first calls load once.
    """

    def __init__(self, folder: Path, name: str, dimension: int = 0, *, verify: bool = False):
        self.folder = folder
        self.name = name
        self._verify = verify
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
        self._lock = threading.Lock()
        self._tables: _Tables | None = None

    def __repr__(self) -> str:
        return f"StaticEmbedder(name={self.name!r}, dimension={self.dimension})"

    def load(self) -> None:
        """Load the tables now instead of on the first embed (e.g. at daemon start)."""
        self._loaded()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        check_texts(texts)
        tables = self._loaded()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), POOL_CHUNK):
            chunk = texts[start : start + POOL_CHUNK]
            out[start : start + len(chunk)] = _pool(tables, chunk, self.dimension)
        return out

    def _loaded(self) -> _Tables:
        tables = self._tables
        if tables is None:
            with self._lock:
                if self._tables is None:
                    self._tables = _load_tables(self.folder, self.dimension, self._verify)
                tables = self._tables
        return tables


def _pool(tables: _Tables, texts: Sequence[str], dimension: int) -> np.ndarray:
    """One vectorised pass: tokenize all, gather every token row at once, sum per text."""
    tokenizer = tables.tokenizer
    encodings = tokenizer.encode_batch_fast(  # type: ignore[attr-defined]
        [text[:MAX_CHARS] for text in texts], add_special_tokens=False
    )
    id_lists: list[list[int]] = []
    for text, encoding in zip(texts, encodings, strict=True):
        # Truncate, then drop unknown tokens, in model2vec's order, so vectors match its own.
        ids = [] if is_blank(text) else encoding.ids[:MAX_TOKENS]
        if tables.unk_id is not None and tables.unk_id in ids:
            ids = [i for i in ids if i != tables.unk_id]
        id_lists.append(ids)
    counts = np.fromiter((len(ids) for ids in id_lists), dtype=np.int64, count=len(id_lists))
    out = np.zeros((len(texts), dimension), dtype=np.float32)
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        return out
    flat = np.fromiter(
        (i for ids in id_lists for i in ids), dtype=np.int64, count=int(counts.sum())
    )
    starts = np.concatenate(([0], np.cumsum(counts[filled])[:-1]))
    # Summing instead of averaging is enough: the mean differs only by a positive factor,
    # which normalisation removes.
    out[filled] = np.add.reduceat(tables.vectors[flat], starts, axis=0)
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
    return _Tables(tokenizer=tokenizer, vectors=vectors, unk_id=_unk_id(tokenizer))


def _token_vectors(tensors: dict[str, np.ndarray], folder: Path) -> np.ndarray:
    """One float32 row per token id, with model2vec's optional weights and mapping applied."""
    unknown = set(tensors) - {"embeddings", "weights", "mapping"}
    if "embeddings" not in tensors or unknown:
        raise EmbedderError(
            f"{folder}/model.safetensors: expected tensors embeddings[, weights, mapping], "
            f"found {sorted(tensors)}"
        )
    vectors = tensors["embeddings"].astype(np.float32)
    if vectors.ndim != 2:
        raise EmbedderError(f"{folder}/model.safetensors: embeddings must be 2-D")
    # model2vec's quantised formats: "weights" scales each token's row, "mapping" maps a
    # token id to a shared row. Folding both into one table keeps the hot path a gather.
    if "mapping" in tensors:
        vectors = vectors[tensors["mapping"].astype(np.int64)]
    if "weights" in tensors:
        vectors *= tensors["weights"].astype(np.float32)[:, None]
    return np.ascontiguousarray(vectors)


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
