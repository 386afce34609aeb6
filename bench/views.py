"""What role-limited views of one snapshot cost, in one process: the workspace is loaded
(from the parse cache kept beside it, as bench/scale.py does) and indexed whole, then
each role set's view is made and indexed in turn, as the daemon's warm step does for a
token with those roles (the collector paused, the view frozen after); for each, the declarations it leaves out, whether it is the whole
workspace or shares another role set's view, the CPU it took and the RSS after it.

    python bench/views.py [--size 100k] [--shape spread|clustered]
                          [--roles ",ops,qa,coding_agent,reviewer"]

`--roles` is a comma-separated list of role sets, each a `+`-joined list of roles (an
empty item is a token without roles). The synthetic workspaces give about 5% of their
declarations readers `developer` and `coding_agent`, so every other role set reads the
same declarations: spread over every file, or with `--shape clustered` all of one file in
20 (see `synth.py`).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time

import scale
import synth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100k")
    parser.add_argument(
        "--shape",
        choices=synth.SHAPES,
        default="spread",
        help="clustered: the restricted declarations in one file of 20, not in every file",
    )
    parser.add_argument("--roles", default=",ops,qa,coding_agent,reviewer")
    parser.add_argument("--json", action="store_true", help="print JSON instead of lines")
    args = parser.parse_args(argv)
    from memhubd.index.workspace import index_for
    from memhubd.runtime.heap import settle_long_lived, settled
    from memhubd.service import access

    snapshot = scale.load(synth.parse_size(args.size), args.shape)
    index_for(snapshot.workspace)
    gc.collect()
    settle_long_lived()  # as the daemon leaves a served snapshot: frozen
    base = scale.rss_mib()
    rows = []
    views: list[object] = []
    for item in args.roles.split(","):
        roles = frozenset(role for role in item.split("+") if role)
        started = time.process_time()

        def view(roles: frozenset[str] = roles) -> object:
            cut = access._cut_of(snapshot, roles)  # noqa: SLF001 - what a token's request makes
            if cut.workspace is not snapshot.workspace:
                index_for(cut.workspace)
            return cut

        # As the daemon's warm step makes a view: the collector paused, the view frozen.
        cut = settled(view)()
        took = time.process_time() - started
        shares = next((n for n, view in enumerate(views) if view is cut.workspace), None)
        views.append(cut.workspace)
        rows.append(
            {
                "roles": sorted(roles),
                "hidden": len(cut.hidden),
                "declarations": len(cut.workspace.declarations),
                "view": "whole"
                if cut.workspace is snapshot.workspace
                else ("own" if shares is None else f"shares #{shares + 1}'s"),
                "cpu_s": took,
                "rss_mib": scale.rss_mib(),
            }
        )
    if args.json:
        print(json.dumps({"benchmark": "views", "rss_whole_mib": base, "views": rows}, indent=2))
        return 0
    print(f"whole workspace indexed: RSS {base:.0f} MiB")
    for n, row in enumerate(rows, 1):
        print(
            f"#{n} roles {row['roles']}: {row['hidden']} hidden, view {row['view']}, "
            f"cpu {row['cpu_s']:.2f} s, RSS {row['rss_mib']:.0f} MiB "
            f"(+{row['rss_mib'] - base:.0f})"
        )
    return 0


if __name__ == "__main__":  # the parse pool's workers import this module
    sys.exit(main())
