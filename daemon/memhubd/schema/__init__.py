"""Memory types: descriptors, the registry, the standard pack and workspace manifests (spec §2).

Everything a declaration needs to know about its type comes from here; this
package never reads `.mem` sources.
"""

from memhubd.schema.descriptor import (
    RUNTIME_ROLES,
    UNIVERSAL_FIELDS,
    SchemaError,
    TypeDescriptor,
)
from memhubd.schema.manifest import (
    WORKSPACE_MANIFEST,
    WORKSPACE_SCHEMA_VERSION,
    manifest_paths,
    registry_for_paths,
)
from memhubd.schema.registry import TypeRegistry
from memhubd.schema.standard import STANDARD_SOURCE, standard_type_descriptors

__all__ = [
    "RUNTIME_ROLES",
    "STANDARD_SOURCE",
    "UNIVERSAL_FIELDS",
    "WORKSPACE_MANIFEST",
    "WORKSPACE_SCHEMA_VERSION",
    "SchemaError",
    "TypeDescriptor",
    "TypeRegistry",
    "manifest_paths",
    "registry_for_paths",
    "standard_type_descriptors",
]
