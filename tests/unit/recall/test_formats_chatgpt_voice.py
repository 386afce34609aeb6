"""ChatGPT voice conversations: both sides are `multimodal_text` whose parts are objects,
an `audio_transcription` (the words said) often followed by an `audio_asset_pointer`
(the recording). The words are kept; the recordings, like images, are not."""

from __future__ import annotations

import json
from typing import Any

from memhubd.recall.ingest import chunk, parse


def spoken(text: str, direction: str) -> list[dict[str, Any]]:
    return [
        {"content_type": "audio_transcription", "text": text, "direction": direction},
        {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://file_7f3a"},
    ]


def node(key: str, parent: str | None, role: str | None, parts: list[Any], at: float) -> dict:
    message = None
    if role:
        message = {
            "id": key,
            "author": {"role": role},
            "create_time": at,
            "content": {"content_type": "multimodal_text", "parts": parts},
        }
    return {"id": key, "parent": parent, "children": [], "message": message}


def voice_export() -> str:
    mapping = {
        "r": node("r", None, None, [], 0),
        "q": node("q", "r", "user", spoken("How long do I rest a brisket after smoking?", "in"), 1),
        "a": node("a", "q", "assistant", spoken("Rest it wrapped for at least an hour.", "out"), 2),
    }
    mapping["r"]["children"], mapping["q"]["children"] = ["q"], ["a"]
    return json.dumps([{"title": "Brisket", "id": "c1", "current_node": "a", "mapping": mapping}])


def test_a_voice_conversation_keeps_both_sides_transcribed_words() -> None:
    chunks = chunk(parse(voice_export(), "chatgpt"))

    assert [c.content for c in chunks] == [
        "> How long do I rest a brisket after smoking?\nRest it wrapped for at least an hour."
    ]


def test_a_voice_part_beside_typed_text_keeps_both_but_never_the_recording() -> None:
    parts = ["Here is the photo.", *spoken("Is this cut a flat or a point?", "in")]
    mapping = {"q": node("q", None, "user", parts, 1)}

    text = chunk(parse(json.dumps([{"title": "Cut", "mapping": mapping}]), "chatgpt"))[0].content

    assert text == "> Here is the photo.\nIs this cut a flat or a point?"
    assert "sediment" not in text
