"""A declaration's encoded piece outlives its snapshot when the next snapshot of the same
workspace keeps the declaration: a reload does not make every answer encode it again.
Pieces are shared by the snapshots of one workspace host only, never given to a
declaration they were not encoded from, let go of when a snapshot replaces their
file, and go with the host."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

from memhubd.service import encoding


class Declaration:
    def __init__(self, name: str, file: str = "a.mem") -> None:
        self.name = name
        self.file = file


class Snapshot:
    """What the piece tables need of a snapshot (weakly referenced, as a real one)."""

    def __init__(self, declarations: list[Declaration], files: tuple[object, ...] = ()) -> None:
        self.workspace = SimpleNamespace(declarations=declarations)
        self.files = files


def source(path: str, digest: str) -> SimpleNamespace:
    return SimpleNamespace(path=path, digest=digest)


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


def test_a_new_snapshot_lets_go_of_the_pieces_of_the_files_it_replaced() -> None:
    # given a snapshot of two files whose declarations were encoded
    host = Host()
    kept, edited = Declaration("kept", "a.mem"), Declaration("edited", "b.mem")
    files = (source("a.mem", "1"), source("b.mem", "1"))
    calls: list[str] = []
    piece = encoding.pieces(Snapshot([kept, edited], files), "query", counting_encoder(calls), host)
    piece(kept), piece(edited)
    gone = weakref.ref(edited)
    # when the next snapshot replaces b.mem (and keeps a.mem's source as it was)
    replaced = Declaration("edited", "b.mem")
    second = Snapshot([kept, replaced], (files[0], source("b.mem", "2")))
    del edited, piece
    calls.clear()
    piece = encoding.pieces(second, "query", counting_encoder(calls), host)
    gc.collect()
    # then the replaced declaration is no longer held, and the kept piece is reused
    assert gone() is None
    assert piece(kept) == b'{"name":"kept"}' and piece(replaced) == b'{"name":"edited"}'
    assert calls == ["edited"]


def test_a_removed_file_lets_go_of_its_pieces_too() -> None:
    host = Host()
    first, second = Declaration("a", "a.mem"), Declaration("b", "b.mem")
    files = (source("a.mem", "1"), source("b.mem", "1"))
    piece = encoding.pieces(Snapshot([first, second], files), "query", counting_encoder([]), host)
    piece(first), piece(second)
    gone = weakref.ref(second)
    del second, piece

    after = Snapshot([first], (files[0],))
    encoding.pieces(after, "query", counting_encoder([]), host)
    gc.collect()

    assert gone() is None



def test_many_reads_kept_pieces_and_encodes_the_others_as_one_at_a_time_would() -> None:
    # given a table that kept one piece, and an entry left under another object's id
    host = Host()
    kept, new, stranger = Declaration("kept"), Declaration("new"), Declaration("stranger")
    snapshot = Snapshot([kept, new, stranger])
    calls: list[str] = []
    piece = encoding.pieces(snapshot, "query", counting_encoder(calls), host)
    piece(kept)
    table = encoding._store(snapshot, host)[0].shapes["query"]
    table[id(stranger)] = (kept, b'{"name":"kept"}')  # as after an id was reused
    calls.clear()
    # when many pieces are read at once, one declaration twice
    found = piece.many([new, kept, stranger, new])
    # then each is the piece one call would give; only what was not kept is encoded
    assert found == [
        b'{"name":"new"}',
        b'{"name":"kept"}',
        b'{"name":"stranger"}',
        b'{"name":"new"}',
    ]
    assert calls == ["new", "stranger"]


def test_a_forms_pieces_start_over_past_their_bytes(monkeypatch) -> None:  # noqa: ANN001
    # Given pieces of 1,000 bytes and a budget of about 10 of them a form
    big = 1000
    monkeypatch.setattr(encoding, "PIECE_BYTES", 10 * (big + 33 + encoding._PIECE_ENTRY))
    declarations = [Declaration(f"d{n}") for n in range(25)]
    snapshot = Snapshot(declarations)  # a count bound (2 x 25 + 1024) far above
    calls: list[str] = []

    def encode(declaration: Declaration) -> bytes:
        calls.append(declaration.name)
        return declaration.name.encode().ljust(big, b" ")

    host = Host()
    piece = encoding.pieces(snapshot, "query", encode, host)
    # When every declaration is encoded, then the first again
    pieces = [piece(d) for d in declarations]
    again = piece(declarations[0])
    # Then each piece is right, the form held at most ten at a time, and the first
    # was encoded again
    assert all(p.startswith(d.name.encode()) for p, d in zip(pieces, declarations, strict=True))
    assert again == pieces[0] and calls.count("d0") == 2
    table = encoding._store(snapshot, host)[0].shapes["query"]
    assert 1 <= len(table) <= 10
    assert table.used <= encoding.PIECE_BYTES
    # and what it knows of their files is of those it holds, no more
    assert set().union(*table.by_file.values()) == set(table)
    # and a piece still kept is read without encoding it again
    before = len(calls)
    piece(declarations[0])
    assert len(calls) == before
