"""The scripts' entry points: Ctrl-C while a command's modules load is exit 130, quietly."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Raises KeyboardInterrupt when the command's module is imported, as a Ctrl-C that
# lands while it loads would, then runs the script's entry point.
INTERRUPTED = """
import sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, Interrupt())
from {entry} import run
run()
"""


@pytest.mark.parametrize(
    ("entry", "module"), [("memctl.entry", "memctl.cli"), ("memhubd.entry", "memhubd.cli")]
)
def test_ctrl_c_while_the_command_loads_exits_130_without_a_traceback(
    entry: str, module: str
) -> None:
    script = INTERRUPTED.format(entry=entry, module=module)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")


def test_the_entry_points_run_the_commands() -> None:
    for command in ("memctl.entry", "memhubd.entry"):
        script = f"import sys; sys.argv = ['x', '--version']; from {command} import run; run()"
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0 and done.stdout.strip(), (command, done.stderr)
