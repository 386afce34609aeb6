"""A git branch switch in a served workspace: how long until the daemon serves the new
tree, and how long an edit in another workspace of the same daemon waits meanwhile.

A workspace that is a git repository (a copy of examples/team-coding) gets a branch
with FILES generated `.mem` files (PER_DIR to a directory); the daemon (default
settings, a second workspace beside it) starts on that branch. Then `git checkout`
switches to the branch without them, deleting them all, and one file of the other
workspace is edited EDIT_AFTER seconds later (1.2 s: as the switch's build begins,
builds of all workspaces sharing one slot). Deleted files are served through their grace
(`vanish_grace_ms`, 1 s by default) before a build drops them, so the switch cannot be
served sooner than that; the edit elsewhere has no grace to wait for.

    .venv/bin/python bench/branch_switch.py --files 4000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from daemon import free_port

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def make_repository(root: Path, files: int, per_dir: int) -> None:
    shutil.copytree(REPO / "examples" / "team-coding", root, ignore=shutil.ignore_patterns(".*"))
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=b@e", "-c", "user.name=bench", "add", "-A")
    git(root, "-c", "user.email=b@e", "-c", "user.name=bench", "commit", "-qm", "base")
    git(root, "checkout", "-q", "-b", "generated")
    for number in range(files):
        folder = root / "gen" / f"d{number // per_dir:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{number:06d}.mem").write_text(
            f"module gen.d{number // per_dir}\n\nfact gen.f{number} {{\n"
            f'  subject: Component.Database\n  claim: "generated fact {number}"\n}}\n'
        )
    git(root, "-c", "user.email=b@e", "-c", "user.name=bench", "add", "-A")
    git(root, "-c", "user.email=b@e", "-c", "user.name=bench", "commit", "-qm", "generated")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=4000, help="generated files (default 4000)")
    parser.add_argument("--per-dir", type=int, default=100, help="files per directory (100)")
    parser.add_argument(
        "--edit-after", type=float, default=1.2, help="seconds from the switch to the edit"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memhub-branch-") as tmp:
        base = Path(tmp)
        switched, other = base / "switched", base / "other"
        make_repository(switched, args.files, args.per_dir)
        shutil.copytree(REPO / "examples" / "assistant", other, ignore=shutil.ignore_patterns(".*"))
        state = base / "state"
        made = subprocess.run(
            [str(BIN / "memhubd"), "token", "create", "bench", "--scopes", "all", "--roles",
             "*", "--state-dir", str(state), "--json"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        headers = {"authorization": f"Bearer {json.loads(made.stdout)['token']}"}
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        daemon = subprocess.Popen(
            [str(BIN / "memhubd"), "serve", "--port", str(port), "--socket", "",
             "--state-dir", str(state), "--workspace", f"switched={switched}",
             "--workspace", f"other={other}"],
            stdout=subprocess.DEVNULL, stderr=open(base / "daemon.log", "wb"),  # noqa: SIM115
        )  # fmt: skip
        try:

            def info(name: str) -> dict:
                answer = httpx.get(f"{url}/v1/workspaces/{name}", headers=headers, timeout=60)
                return answer.json()  # type: ignore[no-any-return]

            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                try:
                    if info("switched").get("declarations", 0) >= args.files:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
            before = info("switched")["declarations"]
            generation = info("other")["generation"]
            started = time.monotonic()
            git(switched, "checkout", "-q", "main")
            checked_out = time.monotonic() - started
            served = elsewhere = edited = None
            while (served is None or elsewhere is None) and time.monotonic() - started < 300:
                if edited is None and time.monotonic() - started >= args.edit_after:
                    edited = time.monotonic()
                    with (other / "people.mem").open("a") as handle:
                        handle.write('\nentity Person.Late {\n  canonical_name: "Late"\n}\n')
                if served is None and info("switched")["declarations"] < args.files:
                    served = time.monotonic() - started
                moved = edited is not None and elsewhere is None
                if moved and info("other")["generation"] != generation:
                    elsewhere = time.monotonic() - edited  # type: ignore[operator]
                time.sleep(0.01)
        finally:
            daemon.terminate()
            daemon.wait(30)
    report = {
        "files": args.files,
        "declarations_before": before,
        "checkout_s": round(checked_out, 3),
        "switch_served_s": round(served, 3) if served is not None else None,
        "edit_elsewhere_served_s": round(elsewhere, 3) if elsewhere is not None else None,
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"{args.files} files deleted by a branch switch: git checkout {report['checkout_s']} s, "
            f"served after {report['switch_served_s']} s (grace 1 s); an edit in the other "
            f"workspace {args.edit_after} s after the switch served after "
            f"{report['edit_elsewhere_served_s']} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
