"""Python's own `re`, run in child processes that are killed when their time is up.

Some guard patterns can only be trusted to `re` itself (see `patterns`), and `re` has
no timeout: a search that backtracks exponentially would hold its thread for good.
So such searches run in a small pool of helper processes; a search that outlives its
deadline is answered with `SandboxTimeout` and its process is killed and replaced.
Nothing here knows about guards or checks: patterns, texts, flags and deadlines only.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time

from memhubd.compiled import CACHED_PATTERN_CHARS

# The child imports nothing but `re` and `json`: `-I -S` keeps the user's environment,
# site-packages and start-up hooks out of it, and start-up at a few tens of ms.
_CHILD = """
import json, re, sys
read, write = sys.stdin.readline, sys.stdout.write
while True:
    line = read()
    if not line:
        break
    pattern, text, flags = json.loads(line)
    try:
        found = re.search(pattern, text, flags) is not None
        if len(pattern) > LONG_PATTERN:  # not kept in re's cache (memhubd.compiled)
            re.purge()
        write('{"found": %s}\\n' % ('true' if found else 'false'))
    except Exception as error:
        write(json.dumps({"error": str(error)}) + "\\n")
    sys.stdout.flush()
""".replace("LONG_PATTERN", str(CACHED_PATTERN_CHARS))

MAX_PROCESSES = 2  # searches beyond this wait for a free process (within their deadline)
_START_TIMEOUT = 30.0  # seconds for a helper interpreter to start, even on a loaded machine


class SandboxTimeout(Exception):
    """The search did not finish before its deadline (its process was killed)."""


class SandboxError(Exception):
    """The helper process failed or `re` raised; the message says which."""


class _Child:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            close_fds=True,
        )
        self._buffer = b""

    def ready(self) -> None:
        """Wait until the interpreter has started (a first trivial search answered)."""
        self.search("", "", 0, time.monotonic() + _START_TIMEOUT)

    def search(self, pattern: str, text: str, flags: int, deadline: float) -> bool:
        request = json.dumps([pattern, text, flags]).encode("ascii") + b"\n"
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(request)
        out = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxTimeout(pattern)
            ready, _, _ = select.select([out], [], [], remaining)
            if not ready:
                raise SandboxTimeout(pattern)
            chunk = os.read(out, 65536)
            if not chunk:
                raise SandboxError("the regex helper process exited")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        answer = json.loads(line)
        if "error" in answer:
            raise SandboxError(answer["error"])
        return bool(answer["found"])

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass


class _Pool:
    """At most `MAX_PROCESSES` children; a child that timed out or failed is discarded."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._idle: list[_Child] = []
        self._alive = 0
        self._cond = threading.Condition()

    def search(self, pattern: str, text: str, flags: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        child, started_in = self._acquire(pattern, deadline)
        # Starting a helper is our cost, not the pattern's: it does not eat the budget.
        deadline += started_in
        try:
            found = child.search(pattern, text, flags, deadline)
        except BaseException:
            # Whatever happened (timeout, a broken pipe, an interrupt), the child's state
            # is unknown: it never serves another search.
            child.kill()
            self._release(None)
            raise
        self._release(child)
        return found

    def _acquire(self, pattern: str, deadline: float) -> tuple[_Child, float]:
        """A free child (started if need be) and the seconds it took to start one."""
        with self._cond:
            while not self._idle and self._alive >= self._size:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._cond.wait(remaining):
                    raise SandboxTimeout(pattern)
            if self._idle:
                return self._idle.pop(), 0.0
            self._alive += 1
        started = time.monotonic()
        child: _Child | None = None
        try:
            child = _Child()
            child.ready()
            return child, time.monotonic() - started
        except BaseException as error:
            if child is not None:
                child.kill()
            self._release(None)
            if isinstance(error, OSError | SandboxError | SandboxTimeout):
                raise SandboxError(f"cannot start the regex helper process: {error}") from error
            raise

    def _release(self, child: _Child | None) -> None:
        with self._cond:
            if child is None:
                self._alive -= 1
            else:
                self._idle.append(child)
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            idle, self._idle = self._idle, []
            self._alive -= len(idle)
        for child in idle:
            child.kill()


_POOL = _Pool(MAX_PROCESSES)
atexit.register(_POOL.close)


def search(pattern: str, text: str, flags: int, timeout: float) -> bool:
    """`re.search(pattern, text, flags) is not None`, computed within `timeout` seconds.

    Raises `SandboxTimeout` when the deadline passes first (including the wait for a
    free helper process) and `SandboxError` when the helper fails.
    """
    if timeout <= 0:
        raise SandboxTimeout(pattern)
    return _POOL.search(pattern, text, flags, timeout)
