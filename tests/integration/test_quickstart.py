"""docs/quickstart.md, run as written: every ```sh block against a real daemon started the
way `make run` starts it, so the quickstart cannot drift from the code.

The blocks run in bash, in order, at the root of the repository, with the venv first on
PATH (the doc says to activate it) and the state in a temporary MEMHUB_STATE_DIR and
XDG_RUNTIME_DIR (variables the daemon and memctl read). Environment exported by one
block is seen by the next, as in one terminal. The one substitution: the daemon listens
on a free port, so the doc's `http://127.0.0.1:8377` becomes that address. Running it
must leave the repository's examples/ exactly as they were.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memhubd.daemon import seed_examples

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "docs" / "quickstart.md"
EXAMPLES = REPO / "examples"
VENV_BIN = Path(sys.executable).parent
DOC_URL = "http://127.0.0.1:8377"
BLOCK = re.compile(r"^```(sh|bash)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# Reported by bash for every command of a block that exits 2 or more (a usage error,
# an unreachable daemon, a command not found): the quickstart shows none of those.
TRAP = "trap 'rc=$?; if [ $rc -ge 2 ]; then echo \"QUICKSTART-FAILED($rc): $BASH_COMMAND\" >&2; fi' ERR\n"


def shell_blocks(text: str) -> list[str]:
    return [match.group(2) for match in BLOCK.finditer(text)]


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under `root` (runtime files included) with the hash of its bytes."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@dataclass
class Ran:
    block: str
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Terminal:
    """A bash "terminal": blocks run one after another, sharing exported variables."""

    env: dict[str, str]
    env_file: Path

    def run(self, block: str) -> Ran:
        script = (
            f'set -o pipefail\nsource "{self.env_file}"\n{TRAP}{block}\n'
            f'export -p > "{self.env_file}"\n'
        )
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return Ran(block, done.returncode, done.stdout, done.stderr)


def make_run_command() -> list[str]:
    """What `make run` runs once installed, from the Makefile itself."""
    # Under `make test` this is a nested make: without --no-print-directory it would
    # announce the directory it enters before the recipe.
    recipe = subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", "install", "run"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert recipe[0].endswith("/memhubd") and recipe[1] == "run-examples", recipe
    return [str(VENV_BIN / "memhubd"), *recipe[1:]]


@pytest.fixture
def daemon_env() -> Iterator[dict[str, str]]:
    # A short directory: Unix socket paths are limited to ~100 bytes.
    root = Path(tempfile.mkdtemp(prefix="mhq-"))
    (root / "run").mkdir()
    (root / "home").mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("MEMHUB_", "XDG_")) and key not in ("VIRTUAL_ENV",)
    }
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        HOME=str(root / "home"),
        MEMHUB_STATE_DIR=str(root / "state"),
        XDG_RUNTIME_DIR=str(root / "run"),
        MEMHUB_ROOT=str(root),  # where the test keeps its files; the doc never names it
    )
    try:
        yield env
    finally:
        shutil.rmtree(root, ignore_errors=True)


def start_make_run(env: dict[str, str]) -> tuple[subprocess.Popen[str], str, list[str]]:
    """`make run`'s command on a free port; returns the process, its URL and banner."""
    process = subprocess.Popen(
        [*make_run_command(), "--port", "0"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    banner: list[str] = []
    deadline = time.monotonic() + 60
    assert process.stderr is not None
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        banner.append(line.rstrip("\n"))
        if line.startswith("Press Ctrl-C"):
            break
    found = [re.search(r"HTTP\s+(http://\S+)", line) for line in banner]
    urls = [match.group(1) for match in found if match]
    if process.poll() is not None or not urls:
        process.kill()
        pytest.fail("the daemon did not start:\n" + "\n".join(banner))
    return process, urls[0], banner


def stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGINT)  # Ctrl-C, as the banner says
    try:
        return process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.skipif(
    shutil.which("make") is None or shutil.which("bash") is None, reason="needs make and bash"
)
def test_every_shell_block_of_the_quickstart_runs_against_a_real_daemon(
    daemon_env: dict[str, str],
) -> None:
    blocks = shell_blocks(QUICKSTART.read_text(encoding="utf-8"))
    assert blocks[0].strip() == "make run", "the quickstart starts with `make run`"
    examples_before = tree_digest(EXAMPLES)
    env_file = Path(daemon_env["MEMHUB_ROOT"]) / "env.sh"
    env_file.write_text("")
    process, url, banner = start_make_run(daemon_env)
    try:
        state = Path(daemon_env["MEMHUB_STATE_DIR"])
        assert any(f"{state}/examples/NAME" in line for line in banner), banner
        terminal = Terminal(daemon_env, env_file)
        ran = [terminal.run(block.replace(DOC_URL, url)) for block in blocks[1:]]
    finally:
        code = stop(process)
    for result in ran:
        assert "QUICKSTART-FAILED" not in result.stderr, (result.block, result.stderr)
        assert "Traceback" not in result.stderr, (result.block, result.stderr)
    assert code in (0, 130), code
    outputs = {result.block.splitlines()[0]: result for result in ran}

    first = outputs[
        "memctl status                                   # the local socket is the default"
    ]
    for name in ("assistant", "broken", "team-coding", "writing"):
        assert f"\n{name} " in first.stdout, first.stdout
    assert "exit 1" in first.stdout  # the blocked force push
    edited = next(r for r in ran if "oncall_rota" in r.block)
    assert "fact:harbor.oncall_rota" in edited.stdout, edited.stderr
    review = next(r for r in ran if "review approve" in r.block)
    assert "suggested target: --into decisions.mem" in review.stdout, review.stdout
    assert "marked superseded: decision:api.version_in_header" in review.stdout, review.stderr
    assert re.search(r"decision:api\.version_in_header\s+\[?superseded", review.stdout), (
        review.stdout
    )
    recall = next(r for r in ran if "recall ingest" in r.block)
    assert re.search(r"files=\d+ chunks=[1-9]\d* .* failed=0", recall.stdout), recall.stderr
    assert "source: tokens.md" in recall.stdout, recall.stdout
    assert "## Recent recall (writing)" in recall.stdout, recall.stdout
    tcp = next(r for r in ran if "MEMHUB_TOKEN" in r.block)
    assert tcp.stdout.strip(), tcp.stderr
    # The edits and the approval went to the copies, never to the repository.
    copy = (state / "examples" / "team-coding" / "decisions.mem").read_text(encoding="utf-8")
    assert "harbor.oncall_rota" in copy and "api.version_in_header_v2" in copy
    assert tree_digest(EXAMPLES) == examples_before


# -- the copies make run serves ------------------------------------------------------------


def test_examples_are_copied_once_without_runtime_files(tmp_path: Path) -> None:
    source = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "writing", source / "writing")
    (source / "writing" / ".memdsl" / "proposals").mkdir(parents=True)
    (source / "writing" / ".memdsl" / "audit.log").write_text("{}\n")

    served = seed_examples(source, tmp_path / "state" / "examples")

    copy = Path(served["writing"])
    assert copy == tmp_path / "state" / "examples" / "writing"
    assert (copy / "voice.mem").read_bytes() == (source / "writing" / "voice.mem").read_bytes()
    assert not (copy / ".memdsl").exists()


def test_a_second_run_keeps_the_users_edits_and_reset_starts_over(tmp_path: Path) -> None:
    source = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "writing", source / "writing")
    target = tmp_path / "state" / "examples"
    seed_examples(source, target)
    edited = target / "writing" / "voice.mem"
    edited.write_text(edited.read_text() + "\n# mine\n")

    seed_examples(source, target)
    assert edited.read_text().endswith("# mine\n")

    seed_examples(source, target, reset=True)
    assert edited.read_bytes() == (source / "writing" / "voice.mem").read_bytes()
