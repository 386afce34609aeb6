"""The engine packages import no runtime, service, door or web library (DESIGN's rule of
thumb): they are plain synchronous Python over plain data, testable without a server."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "daemon" / "memhubd"
ENGINE = ("lang", "schema", "model", "lint", "index", "query", "check", "review")
ENGINE += ("recall", "graph", "cowork")
FORBIDDEN = ("memhubd.runtime", "memhubd.service", "memhubd.api", "memhubd.mcp")
FORBIDDEN += ("starlette", "uvicorn", "mcp", "mcp_types", "anyio", "watchfiles", "httpx")
# The HTTP embedder is a client of an outside embeddings service, not a door.
ALLOWED = {("recall/embed/http_api.py", "httpx")}


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("package", ENGINE)
def test_engine_code_imports_no_runtime_service_door_or_web_library(package: str) -> None:
    crossed = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for line, name in _imports(path):
            top = next((f for f in FORBIDDEN if name == f or name.startswith(f + ".")), None)
            if top is not None and (where, top) not in ALLOWED:
                crossed.append(f"{where}:{line} imports {name}")
    assert not crossed, "\n".join(crossed)
