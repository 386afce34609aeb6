"""Codex writes an image the user pasted as text items around it (`<image name=[Image
#1] path="…">`, the image, `</image>`): markup, not the user's words. The image reads as
`[image]`, as a Claude Code image block does; the markup is left out."""

from __future__ import annotations

import json

from memhubd.recall.ingest import chunk, parse


def line(minute: int, role: str, *items: dict[str, str]) -> str:
    payload = {"type": "message", "role": role, "content": list(items)}
    at = f"2026-09-28T10:{minute:02}:00.000Z"
    return json.dumps({"timestamp": at, "type": "response_item", "payload": payload})


def typed(text: str) -> dict[str, str]:
    return {"type": "input_text", "text": text}


def image(opening: str) -> list[dict[str, str]]:
    pixels = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    return [typed(opening), pixels, typed("</image>")]


def answer(text: str) -> dict[str, str]:
    return {"type": "output_text", "text": text}


def rollout(*lines: str) -> str:
    meta = json.dumps(
        {"timestamp": "2026-09-28T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": "r1", "cwd": "/home/ana/src/loom"}}
    )  # fmt: skip
    return "\n".join([meta, *lines]) + "\n"


def test_image_markup_is_no_words_and_an_image_alone_reads_as_image() -> None:
    given = rollout(
        line(1, "user", *image('<image name=[Image #1] path="/tmp/pasted-1.png">'),
             typed("Why is the weft chart clipped?")),
        line(2, "assistant", answer("Its y-axis max is fixed at 40.")),
        line(3, "user", *image("<image name=[Image #2]>")),
        line(4, "assistant", answer("The second screenshot clips the same way.")),
    )  # fmt: skip

    assert [c.content for c in chunk(parse(given, "codex"))] == [
        "> [image]\nWhy is the weft chart clipped?\nIts y-axis max is fixed at 40.",
        "> [image]\nThe second screenshot clips the same way.",
    ]


def test_a_message_that_only_mentions_an_image_tag_is_the_users_words() -> None:
    said = "Why does <image> in the README render as text?"
    given = rollout(line(1, "user", typed(said)), line(2, "assistant", answer("Escape it.")))

    assert [c.content for c in chunk(parse(given, "codex"))] == [f"> {said}\nEscape it."]


def test_an_image_with_no_markup_around_it_reads_as_image() -> None:
    # Older rollouts write the image item alone.
    pixels = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    given = rollout(
        line(1, "user", pixels, typed("Why is the weft chart clipped?")),
        line(2, "assistant", answer("Its y-axis max is fixed at 40.")),
        line(3, "user", pixels),
        line(4, "assistant", answer("The same clip again.")),
    )

    assert [c.content for c in chunk(parse(given, "codex"))] == [
        "> [image]\nWhy is the weft chart clipped?\nIts y-axis max is fixed at 40.",
        "> [image]\nThe same clip again.",
    ]
