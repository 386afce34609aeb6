"""memhubd: the memhub daemon and its offline engine (parse, type, lint, query, check)."""

import sys as _sys

__version__ = "0.1.0"


def _import_structlog_without_rich() -> None:
    # structlog imports `rich` whenever it is installed (a development venv has it through
    # test tools) for console tracebacks and pretty locals, which the daemon's logging
    # configures away (plain tracebacks, no locals): about a tenth of a second of every
    # start. Hidden only while structlog loads; `import rich` works as usual afterwards.
    if "structlog" in _sys.modules or "rich" in _sys.modules:
        return
    _sys.modules["rich"] = None  # type: ignore[assignment]
    try:
        import structlog  # noqa: F401
    finally:
        del _sys.modules["rich"]


_import_structlog_without_rich()
