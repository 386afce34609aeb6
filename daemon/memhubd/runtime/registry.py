"""The type registry a snapshot serves: the manifest and the type packs it names,
fingerprinted by digest so that the registry is rebuilt only when one of them changed; a
broken schema keeps the last good registry. Nothing is read from outside the workspace's
real path, and nothing here reads `.mem` sources.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from memhubd.runtime.confine import Refused, read_confined
from memhubd.runtime.sources import EMPTY_DIGEST, REFUSED_DIGEST, SourceProblem, content_digest
from memhubd.schema import SchemaError, TypeRegistry, registry_for_paths

MANIFEST = "memdsl.json"


@dataclass(frozen=True, slots=True)
class RegistryState:
    fingerprint: tuple[tuple[str, str | None], ...]
    registry: TypeRegistry | None
    problem: SourceProblem | None


Fingerprint = tuple[tuple[str, str | None], ...]


def registry_fingerprint(root: str, real_root: str) -> tuple[Fingerprint, SourceProblem | None]:
    """(path, digest or None if missing) of the manifest and each type pack it names,
    and the first of them that must not be read."""
    manifest = os.path.join(root, MANIFEST)
    refused: list[SourceProblem] = []

    def digest(path: str, label: str) -> tuple[bytes | None, str | None]:
        try:
            found = read_confined(path, real_root)
        except Refused as refusal:
            refused.append(SourceProblem(refusal.kind, manifest, 0, 0, label + refusal.message))
            return None, REFUSED_DIGEST
        return (None, None) if found is None else (found[0], content_digest(found[0]))

    data, manifest_digest = digest(manifest, "")
    parts: list[tuple[str, str | None]] = [(manifest, manifest_digest)]
    if data is not None:
        try:
            schemas = json.loads(data).get("schemas", [])
        except (ValueError, AttributeError):
            schemas = []
        if isinstance(schemas, list):
            for entry in schemas:
                if isinstance(entry, str) and entry.strip():
                    path = os.path.join(root, entry.strip())
                    parts.append((path, digest(path, f"type pack {entry.strip()!r} ")[1]))
    return tuple(parts), (refused[0] if refused else None)


def vanished_parts(previous: RegistryState | None, fingerprint: Fingerprint) -> list[str]:
    """Manifest and type-pack paths that had bytes last time and are missing or empty now."""
    if previous is None or previous.registry is None:
        return []
    gone = (None, EMPTY_DIGEST)
    now = dict(fingerprint)
    manifest_gone = fingerprint[0][1] in gone
    return [
        path
        for path, digest in previous.fingerprint
        # A type pack no longer listed by a readable manifest was dropped on purpose.
        if digest not in gone and (now[path] in gone if path in now else manifest_gone)
    ]


def load_registry(
    root: str,
    real_root: str,
    fingerprint: Fingerprint,
    refused: SourceProblem | None,
    previous: RegistryState | None,
) -> RegistryState:
    kept = previous.registry if previous is not None else None
    for _attempt in range(3):
        if refused is not None:
            # registry_for_paths would read the file itself: never hand it such a path.
            return RegistryState(fingerprint, kept, refused)
        if previous is not None and previous.fingerprint == fingerprint and previous.registry:
            return previous
        try:
            registry, problem = registry_for_paths([root]), None
        except SchemaError as error:
            registry = kept
            problem = SourceProblem("schema_error", os.path.join(root, MANIFEST), 0, 0, str(error))
        # registry_for_paths opens the files by name again: what it read counts only if
        # the confined reads before and after it agree (a link swapped in and out between
        # them is the remaining, narrow window).
        again, refused = registry_fingerprint(root, real_root)
        if again == fingerprint and refused is None:
            return RegistryState(fingerprint, registry, problem)
        fingerprint = again
    message = "the manifest or a type pack kept changing while it was read"
    problem = SourceProblem("read_error", os.path.join(root, MANIFEST), 0, 0, message)
    return RegistryState(fingerprint, kept, problem)
