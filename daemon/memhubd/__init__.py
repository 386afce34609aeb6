"""memhubd: the memhub daemon and its offline engine (parse, type, lint, query, check)."""

__version__ = "0.1.0"
