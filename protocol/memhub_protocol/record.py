"""Frozen value classes without the `dataclasses` module, for what memctl imports.

`dataclasses` pulls in `inspect` (and with it `ast`, `dis`, `tokenize`) and writes
each class's methods with `exec`: about a sixth of a `memctl query`. A `Record`
names its fields in `__slots__` and sets them once in a typed `__init__`; equality,
hashing and repr follow from the fields, as a frozen dataclass's do.
"""

from __future__ import annotations


class Record:
    """A frozen value: subclasses list their fields in `__slots__` and call `_set`."""

    __slots__ = ()

    def _set(self, **values: object) -> None:
        """Give every field its value; only `__init__` calls this."""
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"
