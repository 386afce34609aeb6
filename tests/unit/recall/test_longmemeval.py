"""`memhubd bench longmemeval` on a small file in LongMemEval's format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recall_fakes import HashingEmbedder

from memhubd.cli import main
from memhubd.recall.longmemeval import answer_text, corpus, ndcg, retrieval_text, run


def question(index: int, topic: str) -> dict:
    sessions = [
        [{"role": "user", "content": "I adopted a beagle named Biscuit last spring."},
         {"role": "assistant", "content": "Congratulations on Biscuit!"}],
        [{"role": "user", "content": f"My sister is learning {topic} at the community college."},
         {"role": "assistant", "content": "That sounds fun."}],
        [{"role": "assistant", "content": "An assistant-only session is skipped."}],
    ]  # fmt: skip
    return {
        "question_id": f"q{index}",
        "question_type": "single-session-user",
        "question": f"What is my sister learning, {topic}?",
        "answer": topic,
        "haystack_sessions": sessions,
        "haystack_session_ids": [f"s{index}a", f"s{index}b", f"s{index}c"],
        "haystack_dates": ["2023/05/01", "2023/05/02", "2023/05/03"],
        "answer_session_ids": [f"s{index}b"],
    }


DATA = [question(1, "pottery"), question(2, "welding"), question(3, "ukulele")]


def test_the_corpus_holds_user_turns_per_session_or_per_turn() -> None:
    sessions = corpus(DATA[0], "session")
    assert [i.corpus_id for i in sessions] == ["s1a", "s1b"]
    turns = corpus(DATA[0], "turn")
    # mempal counts a session's user turns from 0.
    assert [i.corpus_id for i in turns] == ["s1a_turn_0", "s1b_turn_0"]


def test_ndcg_uses_the_retrieved_relevances_as_ideal() -> None:
    assert ndcg([0, 1, 0], 3) == pytest.approx(1 / 1.584962500721156)
    assert ndcg([0, 0], 2) == 0.0


def test_the_answer_session_ranks_first_and_every_metric_is_reported(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with out.open("w") as handle:
        report = run(
            DATA,
            mode="raw",
            granularity="session",
            top_k=10,
            embedder=HashingEmbedder(),
            out=handle,
        )
    assert report["questions"] == 3
    assert report["session"]["recall_any@1"] == 1.0
    assert set(report["turn"]) == {
        f"{m}@{k}" for m in ("recall_any", "ndcg_any") for k in (1, 3, 5, 10)
    }
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["retrieval_results"]["ranked_items"][0]["corpus_id"] == "s1b"


def test_the_command_reads_a_file_in_every_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "lme.json"
    data.write_text(json.dumps(DATA))
    for mode in ("rooms", "aaak"):
        argv = ["bench", "longmemeval", str(data), "--no-vectors", "--mode", mode, "--json"]
        assert main(argv) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["mode"] == mode and report["session"]["recall_any@1"] == 1.0


def test_aaak_mode_stores_and_searches_each_items_aaak_document() -> None:
    item = corpus(DATA[0], "session")[1]
    document = retrieval_text(item, "aaak")
    header, zettel = document.splitlines()[:2]
    assert header == "V1|longmemeval|benchmark|2023/05/02|s1b"
    assert '"My sister is learning pottery at the community college."' in zettel
    assert retrieval_text(item, "raw") == retrieval_text(item, "rooms") == item.text


def test_at_turn_granularity_each_ranked_turn_stands_for_its_session(tmp_path: Path) -> None:
    """mempal never merges ranked turns by session: three turns of another session ranked
    first put the answer session fourth at session level too (R@3 0, NDCG@5 1/log2(5))."""
    entry = {
        "question_id": "q",
        "question_type": "single-session-user",
        "question": "Where is the blue bicycle kept?",
        "answer": "the shed",
        "haystack_sessions": [
            [{"role": "user", "content": "The blue bicycle needs a new blue bicycle bell."},
             {"role": "user", "content": "I painted the blue bicycle frame blue again."},
             {"role": "user", "content": "Is a blue bicycle faster than a red bicycle?"}],
            [{"role": "user", "content": "It lives in the garden shed now."}],
        ],
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/01", "2023/05/02"],
        "answer_session_ids": ["s2"],
    }  # fmt: skip
    out = tmp_path / "out.jsonl"
    with out.open("w") as handle:
        report = run([entry], mode="raw", granularity="turn", top_k=5, embedder=None, out=handle)
    ranked = json.loads(out.read_text())["retrieval_results"]["ranked_items"]
    assert [r["corpus_id"] for r in ranked][3] == "s2_turn_0"
    assert report["session"]["recall_any@3"] == 0.0
    assert report["session"]["recall_any@5"] == 1.0
    assert report["session"]["ndcg_any@5"] == pytest.approx(1 / 2.321928094887362, abs=1e-4)
    assert report["session"] == report["turn"]


def test_answers_are_written_as_mempal_writes_them() -> None:
    assert [answer_text(a) for a in ("3", 3, 3.0, 2.5, 1e-07, True, False)] == [
        "3", "3", "3", "2.5", "0.0000001", "true", "false",
    ]  # fmt: skip
