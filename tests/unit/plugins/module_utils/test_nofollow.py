# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""open_regular and read_regular: what root reads where the container UID writes."""

from __future__ import annotations

import os

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._nofollow import (
    NotRegularFile,
    open_regular,
    read_regular,
)

SECRET = b"root:SECRET-HASH:19000:0:99999:7:::\n"


@pytest.fixture
def place(tmp_path):
    """A directory the UID could write into, and a root-only file outside it."""
    secret = tmp_path / "outside" / "shadow"
    secret.parent.mkdir()
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    cache = tmp_path / "cache"
    cache.mkdir()
    return cache, secret


def plant(cache, secret, kind):
    path = cache / "entry"
    if kind == "symlink":
        path.symlink_to(secret)
    elif kind == "dangling symlink":
        path.symlink_to(cache / "nowhere")
    elif kind == "fifo":
        os.mkfifo(path)  # a blocking open would wait for a writer forever
    elif kind == "directory":
        path.mkdir()
    return path


@pytest.mark.parametrize("kind", ["symlink", "dangling symlink", "fifo", "directory"])
def test_anything_but_a_regular_file_is_refused_unread(place, kind):
    cache, secret = place
    path = plant(cache, secret, kind)
    with pytest.raises(NotRegularFile) as e:
        read_regular(str(path), 4096)
    assert e.value.filename == str(path)
    assert "not read" in e.value.strerror
    assert "SECRET" not in str(e.value)


def test_a_regular_file_is_read_up_to_the_limit(place):
    cache, _secret = place
    path = cache / "log"
    path.write_bytes(b"0123456789")
    assert read_regular(str(path), 4) == b"0123"
    assert read_regular(str(path), 4096) == b"0123456789"


def test_a_link_above_the_last_component_is_the_callers_choice(place):
    """Only the last component is guarded: the cache's own path is the operator's (it may be
    a link to a bigger disk); entries inside it are the UID's."""
    cache, secret = place
    moved = cache.parent / "cache-link"
    moved.symlink_to(secret.parent)
    fd = open_regular(str(moved / "shadow"))
    os.close(fd)


def test_a_missing_file_raises_file_not_found(place):
    cache, _secret = place
    with pytest.raises(FileNotFoundError):
        open_regular(str(cache / "missing"))
