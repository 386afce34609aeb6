"""A declaration's encoded piece outlives its snapshot when the next snapshot of the same
workspace keeps the declaration: a reload does not make every answer encode it again.
Pieces are shared by the snapshots of one workspace host only, never given to a
declaration they were not encoded from, and go with the host."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

from memhubd.service import encoding


class Declaration:
    def __init__(self, name: str) -> None:
        self.name = name


class Snapshot:
    """What the piece tables need of a snapshot (weakly referenced, as a real one)."""

    def __init__(self, declarations: list[Declaration]) -> None:
        self.workspace = SimpleNamespace(declarations=declarations)


class Host:
    """Stands for the served workspace that owns the snapshots."""


def counting_encoder(calls: list[str]):  # noqa: ANN201
    def encode(declaration: Declaration) -> bytes:
        calls.append(declaration.name)
        return f'{{"name":"{declaration.name}"}}'.encode()

    return encode


def test_the_next_snapshot_reuses_the_pieces_of_declarations_it_kept() -> None:
    # given a snapshot whose two declarations were encoded, and which is then replaced
    host = Host()
    kept, edited = Declaration("kept"), Declaration("edited")
    calls: list[str] = []
    first = Snapshot([kept, edited])
    piece = encoding.pieces(first, "query", counting_encoder(calls), host)
    piece(kept), piece(edited)
    del first, piece
    gc.collect()
    # when a reload keeps one declaration and replaces the other
    replaced = Declaration("edited")
    second = Snapshot([kept, replaced])
    calls.clear()
    piece = encoding.pieces(second, "query", counting_encoder(calls), host)
    # then only the new declaration is encoded, and each gets its own bytes
    assert piece(kept) == b'{"name":"kept"}'
    assert piece(replaced) == b'{"name":"edited"}'
    assert calls == ["edited"]


def test_other_hosts_shapes_and_ownerless_snapshots_do_not_share_pieces() -> None:
    shared = Declaration("d")
    host = Host()
    calls: list[str] = []
    encoding.pieces(Snapshot([shared]), "query", counting_encoder(calls), host)(shared)

    encoding.pieces(Snapshot([shared]), "query", counting_encoder(calls), Host())(shared)
    encoding.pieces(Snapshot([shared]), "other", counting_encoder(calls), host)(shared)
    encoding.pieces(Snapshot([shared]), "query", counting_encoder(calls))(shared)
    encoding.pieces(Snapshot([shared]), "query", counting_encoder(calls))(shared)

    assert calls == ["d", "d", "d", "d", "d"]


def test_the_pieces_go_with_their_host() -> None:
    host = Host()
    declaration = Declaration("d")
    snapshot = Snapshot([declaration])
    encoding.pieces(snapshot, "query", counting_encoder([]), host)(declaration)
    gone = weakref.ref(declaration)

    del host, snapshot, declaration
    gc.collect()

    assert gone() is None
