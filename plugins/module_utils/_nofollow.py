# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Open a file where someone else may write, as root, without being led elsewhere.

The Hugging Face cache belongs to the container UID, which runs a model's own code with the
cache mounted read-write: it can put a symlink (or a FIFO) wherever a file is expected.
Root reading such a file must neither follow the link (it would quote any root-readable
file) nor hang on a FIFO. Hard links to files the UID does not own are refused by the
kernel's ``fs.protected_hardlinks``, which every distribution a Spark runs enables.

Standard library only; target-side code: keep it Python 3.8 compatible.
"""

from __future__ import annotations

import errno
import os
import stat

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """The path is a symlink, a FIFO, a directory or a device: it is not read."""


def open_regular(path):
    """A read-only descriptor of the regular file ``path``, its last component never
    followed. Raises FileNotFoundError when it is missing, NotRegularFile when it is a
    symlink or anything but a regular file, OSError otherwise; the caller closes it."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        # Linux answers ELOOP for a symlink under O_NOFOLLOW (FreeBSD: EMLINK).
        if exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
            raise NotRegularFile(
                exc.errno, "a symlink, which is never followed: not read", path
            ) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(errno.EINVAL, "not a regular file: not read", path)
    return fd


def read_regular(path, limit):
    """At most ``limit`` bytes from the start of the regular file ``path`` (see
    open_regular for what is refused)."""
    fd = open_regular(path)
    try:
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(fd, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
