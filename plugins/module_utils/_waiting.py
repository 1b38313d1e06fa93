# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Bounded waiting in one flat loop: look, sleep, look again, until done or out of time.

Private to gb10.serving: standard library only, no Ansible imports, so a module (on the
node) and an action plugin (on the controller) share it. Target-side code: keep it Python
3.8 compatible.

Why a loop in Python: a task file that includes itself once per round nests one level
deeper each round, and ansible-core dies with RecursionError after about 245 rounds, which
a download of hours or a short poll reaches. Here a round is one call of ``look``; memory
and stack stay flat however many rounds there are.
"""

from __future__ import annotations

import os
import time

from ansible_collections.gb10.serving.plugins.module_utils._nofollow import open_regular


def follow(look, poll, budget, clock=time.monotonic, sleep=time.sleep):
    """Call ``look()`` every ``poll`` seconds until its result says ``done`` or ``budget``
    seconds have passed; return ``(last result, rounds, elapsed seconds)``.

    ``look`` returns a dict; a true ``done`` ends the wait. It is always called at least
    once, and never again when the next call would come after the budget is spent, so the
    wait overruns the budget by at most one look. ``clock`` and ``sleep`` are the time
    functions (the unit tests pass their own).
    """
    if poll < 0:
        raise ValueError("poll must be 0 or more seconds, got %r" % (poll,))
    if budget < 0:
        raise ValueError("budget must be 0 or more seconds, got %r" % (budget,))
    start = clock()
    rounds = 0
    while True:
        last = look()
        rounds += 1
        elapsed = clock() - start
        if last.get("done") or elapsed + poll > budget:
            return last, rounds, elapsed
        sleep(poll)


def negative_seconds(values, names):
    """The message for the first of ``names`` whose value in ``values`` (a dict of
    arguments) is below 0, or None when all are 0 or more."""
    for name in names:
        if values[name] < 0:
            return "%s must be 0 or more seconds, got %s" % (name, values[name])
    return None


def tree_bytes(path):
    """The bytes of the regular files under ``path``, symlinks never followed (``du -sb``
    without the links' own sizes); 0 when ``path`` is missing or is itself a link."""
    if os.path.islink(path):
        return 0
    total = 0
    pending = [path]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                # Gone between the listing and the stat: the client renames its partial
                # files as they complete.
                continue
    return total


# The end of a log that read_tail looks at: enough for its lines, never a whole big file.
TAIL_BYTES = 64 * 1024


def read_tail(path, lines=15, max_bytes=TAIL_BYTES):
    """The last ``lines`` lines of the regular file ``path``, as ``(lines, problem)``.

    The file lives where the container UID may write, and this runs as root: a symlink
    there is refused, not read, and so is anything but a regular file (``_nofollow``).
    ``problem`` says why nothing was read; a missing file is not a problem (no lines).
    """
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        return [], "%s: %s" % (path, exc.strerror)
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - max_bytes)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, size - start)
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    # A read from the middle of the file starts inside a line: drop that part.
    tail = text.splitlines()[1 if start else 0 :]
    return (tail[-lines:] if lines > 0 else []), None
