"""In a ChatGPT export the assistant calls a tool (code, the browser, an image model, a
memory or a canvas) by a message addressed to it: `recipient` other than `all`. Those
are tool turns, cut as other tool calls are, never the assistant's words."""

from __future__ import annotations

import json
from typing import Any

from memhubd.recall.ingest import chunk, parse
from memhubd.recall.ingest.formats import MAX_TOOL_CHARS


def node(key: str, parent: str | None, role: str, text: str, **fields: Any) -> dict[str, Any]:
    message = {
        "id": key,
        "author": {"role": role, "name": fields.pop("name", None)},
        "create_time": 1741000000.0 + len(key),
        "content": {"content_type": "text", "parts": [text]},
        **fields,
    }
    return {"id": key, "parent": parent, "children": [], "message": message}


def export(*nodes: dict[str, Any]) -> str:
    mapping = {n["id"]: n for n in nodes}
    for before, after in zip(nodes, nodes[1:], strict=False):
        before["children"] = [after["id"]]
    conversation = {"title": "Hives", "current_node": nodes[-1]["id"], "mapping": mapping}
    return json.dumps([conversation])


def test_messages_to_tools_are_tool_turns_not_the_assistants_words() -> None:
    canvas = json.dumps({"name": "hive_log", "type": "document", "content": "frame " * 400})
    given = export(
        node("q", None, "user", "Draw a bee in a beret and note I keep bees in Lyon.",
             recipient="all"),
        node("d", "q", "assistant", '{"prompt": "a bee in a beret"}', recipient="dalle.text2im"),
        node("b", "d", "assistant", "User keeps bees in Lyon.", recipient="bio"),
        node("c", "b", "assistant", canvas, recipient="canmore.create_textdoc"),
        node("t", "c", "tool", "Model set context updated.", name="bio", recipient="assistant"),
        node("a", "t", "assistant", "Here is your bee.", recipient="all"),
        node("z", "a", "assistant", "A bee again.", recipient=None),
    )  # fmt: skip

    turns = parse(given, "chatgpt").conversations[0].turns

    assert [t.role for t in turns] == [
        "user", "tool", "tool", "tool", "tool", "assistant", "assistant",
    ]  # fmt: skip
    assert turns[1].text == '[tool_use dalle.text2im] {"prompt": "a bee in a beret"}'
    assert turns[2].text == "[tool_use bio] User keeps bees in Lyon."
    assert turns[3].text.startswith("[tool_use canmore.create_textdoc] {")
    assert len(turns[3].text) <= MAX_TOOL_CHARS + 2  # cut, as a tool call is
    [exchange] = chunk(parse(given, "chatgpt"))
    assert exchange.speaker == "user"
