"""memctl: the thin command-line client of memhubd (talks to its JSON API only)."""

__version__ = "0.1.0"
