"""A declaration's encoded piece outlives its snapshot when the next snapshot of the same
workspace keeps the declaration: a reload does not make every answer encode it again.
Pieces are never shared between workspaces, nor given to a declaration they were not
encoded from."""

from __future__ import annotations

from types import SimpleNamespace

from memhubd.service import encoding


class Declaration:
    def __init__(self, name: str) -> None:
        self.name = name


class Snapshot:
    """What the piece tables need of a snapshot (weakly referenced, as a real one)."""

    def __init__(self, workspace: SimpleNamespace, **names: str) -> None:
        self.workspace = workspace
        self.__dict__.update(names)


def snapshot(name: str, root: str, declarations: list[Declaration]) -> Snapshot:
    return Snapshot(SimpleNamespace(declarations=declarations), name=name, root=root)


def counting_encoder(calls: list[str]):  # noqa: ANN201
    def encode(declaration: Declaration) -> bytes:
        calls.append(declaration.name)
        return f'{{"name":"{declaration.name}"}}'.encode()

    return encode


def test_the_next_snapshot_reuses_the_pieces_of_declarations_it_kept() -> None:
    # given a snapshot whose two declarations were encoded
    kept, edited = Declaration("kept"), Declaration("edited")
    first = snapshot("ws", "/srv/ws", [kept, edited])
    calls: list[str] = []
    piece = encoding.pieces(first, "query", counting_encoder(calls))
    piece(kept), piece(edited)
    # when a reload keeps one declaration and replaces the other
    replaced = Declaration("edited")
    second = snapshot("ws", "/srv/ws", [kept, replaced])
    calls.clear()
    piece = encoding.pieces(second, "query", counting_encoder(calls))
    # then only the new declaration is encoded, and each gets its own bytes
    assert piece(kept) == b'{"name":"kept"}'
    assert piece(replaced) == b'{"name":"edited"}'
    assert calls == ["edited"]


def test_other_workspaces_and_shapes_do_not_share_pieces() -> None:
    shared = Declaration("d")
    one = snapshot("one", "/srv/one", [shared])
    calls: list[str] = []
    encoding.pieces(one, "query", counting_encoder(calls))(shared)

    encoding.pieces(snapshot("two", "/srv/two", [shared]), "query", counting_encoder(calls))(shared)
    encoding.pieces(snapshot("one", "/srv/one", [shared]), "other", counting_encoder(calls))(shared)

    assert calls == ["d", "d", "d"]


def test_a_stand_in_without_a_name_shares_nothing() -> None:
    shared = Declaration("d")
    calls: list[str] = []
    for _ in range(2):
        stand_in = Snapshot(SimpleNamespace(declarations=[shared]))
        encoding.pieces(stand_in, "query", counting_encoder(calls))(shared)

    assert calls == ["d", "d"]
