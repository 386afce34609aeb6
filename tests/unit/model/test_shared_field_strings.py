"""Typed declarations share one object per repeated field key and short value."""

from __future__ import annotations

from memhubd.lang.parser import parse_text
from memhubd.model.declaration import Declaration

TEXT = """
fact a.one {
  claim: "The first claim is long enough not to be shared with any other one."
  scope: team("core")
  tags: [billing, "on call"]
  evidence { source: notes/x.md quote: "q" }
}

fact a.two {
  claim: "The second claim is long enough not to be shared with any other one."
  scope: team("core")
  tags: [billing]
  evidence { source: notes/x.md quote: "q" }
}
"""


def test_repeated_keys_and_short_values_are_one_object_and_fields_are_unchanged() -> None:
    # Given two parsed declarations with the same keys and some equal short values
    raws = parse_text(TEXT, "t.mem").declarations
    before = [repr(raw.fields) for raw in raws]

    # When they are typed
    one, two = (Declaration.from_raw(raw, None) for raw in raws)

    # Then their fields read as before, and the parsed declarations hold the same dicts
    assert [repr(d.fields) for d in (one, two)] == before
    assert one.fields is raws[0].fields and two.fields is raws[1].fields
    # and equal keys and short values are the same objects, nested ones too
    key_one = next(k for k in one.fields if k == "scope")
    key_two = next(k for k in two.fields if k == "scope")
    assert key_one is key_two
    assert one.fields["scope"] is two.fields["scope"]
    assert one.fields["tags"][0] is two.fields["tags"][0]
    assert one.fields["evidence"]["source"] is two.fields["evidence"]["source"]
    # while long values (claims) are left alone
    assert one.claim_text != two.claim_text
