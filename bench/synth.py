"""Seeded generator of synthetic memdsl workspaces, query sets and check sets for the benchmarks.

Output is a pure function of (size, seed, GENERATOR_VERSION) and is cached under `bench/.cache/`.
Standard library only (it also runs under memdsl's interpreter); it never imports either engine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import synth_workload
from synth_decls import MODULE_SIZE, REFERENCE_DATE, Decl, DeclFactory
from synth_text import Text, write_declaration

GENERATOR_VERSION = 3
CACHE_DIR = Path(__file__).resolve().parent / ".cache"
QUERY_COUNT = 400
CHECK_COUNT = 400

SCHEMA_FILE = "schemas/ops.memschema.json"
SCHEMA = {
    "name": "ops",
    "version": "1",
    "types": {
        "rule": {
            "runtime_role": "constraint",
            "required_fields": ["claim", "evidence", "scope"],
            "optional_fields": ["owner", "rationale"],
            "search_fields": ["rationale", "owner"],
            "capabilities": [
                "requires_evidence",
                "searchable",
                "enforceable",
                "guardable",
                "exceptions_recommended",
            ],
            "defaults": {"force": "hard", "status": "active"},
            "allowed_forces": ["hard"],
            "diagnostic_codes": {"exceptions_recommended": "rule_without_exception"},
        },
        "bug_pattern": {
            "runtime_role": "assertion",
            "required_fields": ["claim", "evidence", "scope"],
            "optional_fields": ["symptoms", "workaround", "fix"],
            "search_fields": ["symptoms", "workaround", "fix"],
            "capabilities": ["requires_evidence", "searchable"],
        },
        "practice": {
            "runtime_role": "guidance",
            "required_fields": ["claim", "evidence", "scope"],
            "optional_fields": ["tool", "reason"],
            "search_fields": ["tool", "reason"],
            "capabilities": ["requires_evidence", "searchable"],
        },
    },
}
MANIFEST = {"schema_version": "memdsl.workspace.v1", "schemas": [SCHEMA_FILE]}


@dataclass(frozen=True, slots=True)
class SynthWorkspace:
    """Where one generated workspace and its workloads live on disk."""

    size: int
    seed: int
    root: Path

    @classmethod
    def at(cls, root: Path) -> SynthWorkspace:
        """An already generated set, found by its directory (size and seed from its meta)."""
        meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
        return cls(meta["size"], meta["seed"], root)

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def queries_file(self) -> Path:
        return self.root / "queries.json"

    @property
    def checks_file(self) -> Path:
        return self.root / "checks.json"

    @property
    def meta_file(self) -> Path:
        return self.root / "meta.json"

    def queries(self) -> list[dict]:
        return json.loads(self.queries_file.read_text(encoding="utf-8"))

    def checks(self) -> list[dict]:
        return json.loads(self.checks_file.read_text(encoding="utf-8"))

    def meta(self) -> dict:
        return json.loads(self.meta_file.read_text(encoding="utf-8"))


def parse_size(text: str) -> int:
    """Accept `1000`, `1k`, `10K`, `0.1m`."""
    text = text.strip().lower()
    factor = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    number = text[:-1] if factor != 1 else text
    return int(float(number) * factor)


def size_label(size: int) -> str:
    return f"{size // 1000}k" if size % 1000 == 0 else str(size)


# Workspace shapes. "spread": many scopes, as a large organisation's memory. "dense": few
# scopes holding many constraints each, so memdsl's MUST layer (every constraint sharing a
# scope with a hit) is about a thousand rules and the median answer about 640 KB at 10k.
# "clustered": "spread" with its access policies (readers a role-limited token may lack)
# on every declaration of one file in 20 instead of on 5% of the declarations of every
# file, as a team keeps restricted memory in files of its own.
SHAPES = ("spread", "dense", "clustered")
CLUSTER_EVERY = 20
DENSE_DECLARATIONS_PER_SCOPE = 5_000


def scope_count(size: int, shape: str) -> int | None:
    """The scope pool of a shape (None: the generator's own default)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")
    return max(2, size // DENSE_DECLARATIONS_PER_SCOPE) if shape == "dense" else None


def cache_root(size: int, seed: int, shape: str = "spread") -> Path:
    suffix = "" if shape == "spread" else f"-{shape}"
    return CACHE_DIR / f"n{size}-s{seed}-v{GENERATOR_VERSION}{suffix}"


def ensure_workspace(
    size: int, seed: int = 1, *, force: bool = False, shape: str = "spread"
) -> SynthWorkspace:
    """Return the cached workspace for (size, seed, shape), generating it first when missing."""
    synth = SynthWorkspace(size, seed, cache_root(size, seed, shape))
    if synth.meta_file.exists() and not force:
        return synth
    if synth.root.exists():
        shutil.rmtree(synth.root)
    staging = synth.root.with_name(synth.root.name + f".tmp{os.getpid()}")
    if staging.exists():
        shutil.rmtree(staging)
    generate(size, seed, staging, shape)
    # The rename makes a half-written cache entry impossible to mistake for a finished one.
    try:
        os.replace(staging, synth.root)
    except OSError:
        if not synth.meta_file.exists():
            raise
        shutil.rmtree(staging)  # another process finished the same (size, seed) first
    return synth


def generate(size: int, seed: int, dest: Path, shape: str = "spread") -> dict:
    """Write workspace/, queries.json, checks.json and meta.json (written last) into dest."""
    factory = DeclFactory(random.Random(seed), size, scope_count(size, shape))
    decls = factory.build()
    if shape == "clustered":
        _cluster_policies(decls)
    files = _write_workspace(dest / "workspace", decls, random.Random(seed + 17))
    workload_rng = random.Random(seed * 7919 + 3)
    queries = synth_workload.make_queries(factory, workload_rng, QUERY_COUNT)
    checks = synth_workload.make_checks(factory, workload_rng, CHECK_COUNT)
    _write_json(dest / "queries.json", queries)
    _write_json(dest / "checks.json", checks)
    meta = {**_stats(size, seed, decls, files, factory), "shape": shape}
    _write_json(dest / "meta.json", meta)
    return meta


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _cluster_policies(decls: list[Decl]) -> None:
    """Move the access policies onto every declaration of one file in `CLUSTER_EVERY`
    (the files are consecutive runs of `MODULE_SIZE` declarations; the first, at the
    workspace's root, keeps none)."""
    policy = next((d.fields["access_policy"] for d in decls if "access_policy" in d.fields), None)
    for number, decl in enumerate(decls):
        decl.fields.pop("access_policy", None)
        if policy is not None and (number // MODULE_SIZE) % CLUSTER_EVERY == 1:
            decl.fields["access_policy"] = dict(policy)


def _write_workspace(root: Path, decls: list[Decl], rng: random.Random) -> list[str]:
    _write_json(root / "memdsl.json", MANIFEST)
    _write_json(root / SCHEMA_FILE, SCHEMA)
    chunks = [decls[i : i + MODULE_SIZE] for i in range(0, len(decls), MODULE_SIZE)]
    paths = _layout(len(chunks), rng)
    for rel, chunk in zip(paths, chunks, strict=True):
        module = rel.removesuffix(".mem").replace("/", ".")
        body = "\n".join(write_declaration(d) for d in chunk)
        header = f"# {module}: synthetic memory for benchmarks\nmodule {module}\n\n"
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(header + body, encoding="utf-8")
        for decl in chunk:
            decl.module = module
    return paths


def _layout(count: int, rng: random.Random) -> list[str]:
    """Relative file paths spread over nested directories: area/[team/[topic/]]name.mem."""
    text = Text(rng, vocabulary_size=600)
    areas = text.distinct_words(max(2, int(count**0.5 / 2)))
    teams = {area: text.distinct_words(3) for area in areas}
    topics = {area: text.distinct_words(3) for area in areas}
    used: set[str] = set()
    paths: list[str] = []
    for index in range(count):
        parts: list[str] = []  # the first file sits at the root, as a shared module usually does
        if index > 0:
            area = rng.choice(areas)
            depth = rng.choices((1, 2, 3), weights=(3, 5, 2))[0]
            parts = [area, rng.choice(teams[area]), rng.choice(topics[area])][:depth]
        stem = text.uniform()
        while "/".join([*parts, f"{stem}.mem"]) in used:
            stem = f"{text.uniform()}_{rng.randint(2, 99)}"
        rel = "/".join([*parts, f"{stem}.mem"])
        used.add(rel)
        paths.append(rel)
    return paths


def _stats(size: int, seed: int, decls: list[Decl], files: list[str], f: DeclFactory) -> dict:
    guards = Counter(key for d in decls for key in d.guard_keys())
    return {
        "generator_version": GENERATOR_VERSION,
        "size": size,
        "seed": seed,
        "declarations": len(decls),
        "files": len(files),
        "modules": len(files),
        "directories": len({os.path.dirname(p) for p in files}),
        "types": dict(sorted(Counter(d.kind for d in decls).items())),
        "statuses": dict(sorted(Counter(d.status for d in decls).items())),
        "guard_fields": dict(sorted(guards.items())),
        "supersedes": sum(1 for d in decls if "supersedes" in d.fields),
        "scopes": len(f.scopes),
        "subjects": len(f.entity_names),
        "vocabulary": len(f.text.words),
        "reference_date": REFERENCE_DATE.isoformat(),
        "queries": QUERY_COUNT,
        "checks": CHECK_COUNT,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1k,10k,100k", help="comma-separated sizes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--force", action="store_true", help="regenerate even when cached")
    parser.add_argument("--shape", choices=SHAPES, default="spread", help="workspace shape")
    args = parser.parse_args(argv)
    for size in (parse_size(s) for s in args.sizes.split(",")):
        synth = ensure_workspace(size, args.seed, force=args.force, shape=args.shape)
        meta = synth.meta()
        print(f"{size_label(size)}: {synth.workspace}")
        print(
            f"  {meta['declarations']} declarations, {meta['files']} files, types {meta['types']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
