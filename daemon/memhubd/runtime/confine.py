"""Reading a workspace's files without leaving the workspace's real path.

Whatever symbolic links, `..` entries or a rename racing the read say, bytes are
returned only for a regular file whose open descriptor resolves inside the root.
Paths and bytes only: nothing here parses, and nothing decides what a refusal means.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mode

OUTSIDE_MESSAGE = "leads outside the workspace (symbolic link or '..'); not read"
NOT_REGULAR_MESSAGE = "not a regular file; not read"
NOT_UTF8_NAME_MESSAGE = "its name is not valid UTF-8: rename it to serve its declarations"


class Refused(Exception):
    """A source that must not be read; `kind` and `message` become its SourceProblem."""

    def __init__(self, kind: str, message: str, *, unreadable: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        # There, and a source, but not to be read now (its permissions, an I/O error):
        # what it said last still stands (`serve_file`), unlike a file that is gone.
        self.unreadable = unreadable


def inside(path: str, real_root: str) -> bool:
    return path == real_root or path.startswith(real_root.rstrip(os.sep) + os.sep)


# What a source's stat must match to be taken as unchanged, unread: (mtime_ns, size,
# inode, ctime_ns). The ctime is in it because the others can all come back after an
# edit in place: `cp -p`, `rsync -t --inplace`, `touch -r` or a clock set back restore
# the mtime, and an edit may keep the size; nothing but the kernel sets the ctime.
StatKey = tuple[int, int, int, int]


def stat_tuple(info: os.stat_result) -> StatKey:
    return (info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns)


def _opened_path(fd: int, path: str, info: os.stat_result) -> str | None:
    """The real path of the file open as `fd`; None if no name leads to it any more."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(path)  # no /proc: resolve the name, then compare below
    try:
        named = os.stat(real)
    except OSError:
        return None  # renamed away or deleted since it was opened
    return real if (named.st_dev, named.st_ino) == (info.st_dev, info.st_ino) else None


def read_confined(path: str, real_root: str) -> tuple[bytes, StatKey] | None:
    """The bytes of `path` and its stat after reading; None if it does not exist (now).

    Raises Refused for anything but a regular file inside `real_root`. The check is
    made on the open file, so a link swapped in after the walk cannot redirect the
    read; O_NONBLOCK keeps a FIFO from blocking the open.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            return None  # a link loop leads nowhere, as a dangling link does
        # There, but not to be read (permissions, an I/O error): a problem of the
        # file's, never taken for a deletion.
        raise Refused(
            "read_error", f"cannot read: {error.strerror or error}", unreadable=True
        ) from None
    try:
        info = os.fstat(fd)
        if not stat_mode.S_ISREG(info.st_mode):
            raise Refused("read_error", NOT_REGULAR_MESSAGE)
        real = _opened_path(fd, path, info)
        if real is None:
            return None
        if not inside(real, real_root):
            raise Refused("outside_workspace", OUTSIDE_MESSAGE)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        after = os.fstat(fd)
    except OSError as error:
        # Open, then failing (an I/O error): there, but not to be read.
        raise Refused(
            "read_error", f"cannot read: {error.strerror or error}", unreadable=True
        ) from None
    finally:
        os.close(fd)
    return b"".join(chunks), stat_tuple(after)


def shown_path(path: str) -> str:
    """`path` as answers may carry it: a name that is not UTF-8 (its bytes kept as lone
    surrogates by the file system calls) with those bytes written as `\\xNN`."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    return path


def observe(path: str, real_root: str) -> tuple[StatKey | None, str | None]:
    """`path`'s stat key (`stat_tuple`) now (None: missing), and its real path if it is
    a symbolic link. Raises Refused for a link leading outside, a non-regular file, or
    a path that is not UTF-8 (no answer could name it, nor its declarations' file).
    """
    if shown_path(path) is not path:
        raise Refused("read_error", NOT_UTF8_NAME_MESSAGE)
    try:
        info = os.lstat(path)
        real = None
        if stat_mode.S_ISLNK(info.st_mode):
            # Checked on every build, not only when the bytes are read: a link pointed
            # elsewhere may show the same size and time as the served bytes had.
            real = os.path.realpath(path)
            if not inside(real, real_root):
                raise Refused("outside_workspace", OUTSIDE_MESSAGE)
            info = os.stat(path)
    except OSError:
        return None, None  # missing, or a dangling link (an emacs lock file, say)
    if not stat_mode.S_ISREG(info.st_mode):
        raise Refused("read_error", NOT_REGULAR_MESSAGE)
    return stat_tuple(info), real
