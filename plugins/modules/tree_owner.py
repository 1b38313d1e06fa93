#!/usr/bin/python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: tree_owner
short_description: Give a large directory tree one owner, changing only the entries that are wrong
version_added: 0.1.0
description:
  - Walks the tree at O(path) and sets the owner O(owner) and group O(group) on every entry
    (the root, directories, files, symlinks) whose UID or GID differs. Entries already right
    are only read, so a re-run on a correct tree changes nothing and reports no change.
  - Meant for trees too large for C(ansible.builtin.file) with
    O(ansible.builtin.file#module:recurse=true), such as a Hugging Face cache of about
    150 GB in many files that the engine container, running as a non-root UID, must own.
    That module sets every entry on every run and is far slower and noisier; this one reads
    each entry once (one C(lstat)) and changes only the wrong ones, returning counts and a
    short sample instead of every path.
  - Symlinks are changed themselves (like C(chown -h)) and never followed, so a link pointing
    out of the tree never changes its target. A symlinked directory is not entered. Every step
    is relative to an open directory descriptor, so a directory swapped for a symlink during
    the walk is not followed either.
  - Stays on the filesystem of O(path); mount points below it are neither changed nor entered
    and are returned in RV(skipped_mounts), with a warning.
  - Entries that vanish during the walk (a download renaming its partial files) are skipped
    without error. Any other entry that cannot be read or changed makes the module fail after
    the walk, listing up to 10 of them and what to do.
author:
  - gb10.serving maintainers (@gb10)
extends_documentation_fragment:
  - gb10.serving.attributes
attributes:
  check_mode:
    support: full
    details:
      - Walks the tree and counts what would be changed, without changing anything; the
        result is C(changed) when anything would be changed.
  diff_mode:
    support: full
    details:
      - Returns counts (entries scanned, entries whose owner or group differs from
        O(owner):O(group) before and after), not the list of paths.
options:
  path:
    description:
      - Root of the tree. Must exist. The root itself is checked and fixed too.
      - When it is a symlink, it is followed (like C(chown -R -H)); no symlink below it is.
    type: path
    required: true
  owner:
    description:
      - Numeric UID every entry must have, for example the engine container's V(1000).
      - Names are not resolved; the container UID need not exist on the host.
    type: int
    required: true
  group:
    description:
      - Numeric GID every entry must have.
    type: int
    required: true
  sample:
    description:
      - How many paths of fixed entries to return in RV(fixed_sample). V(0) returns none.
    type: int
    default: 20
notes:
  - Run it as root (C(become=true)) unless every wrong entry belongs to the connecting user
    and O(owner) is that user.
  - Hard links are changed like any other file. With C(fs.protected_hardlinks=0) a user
    owning the tree could link a file it does not own into it; keep the default V(1).
seealso:
  - module: ansible.builtin.file
"""

EXAMPLES = r"""
- name: Give the Hugging Face cache to the engine container UID
  gb10.serving.tree_owner:
    path: /srv/gb10/hf-cache
    owner: 1000
    group: 1000
  become: true
  register: __engine_hf_cache_owner

- name: Show what a repair would change, without changing it
  gb10.serving.tree_owner:
    path: /srv/gb10/hf-cache
    owner: "{{ engine_uid }}"
    group: "{{ engine_gid }}"
    sample: 5
  check_mode: true
  diff: true
  become: true
"""

RETURN = r"""
scanned:
  description: Entries whose ownership was checked, the root included (not mount points below it).
  returned: success
  type: int
  sample: 101001
fixed:
  description: Entries whose owner or group was changed (in check mode, would be changed).
  returned: success
  type: int
  sample: 12
fixed_sample:
  description: The first O(sample) paths of RV(fixed), in walk order.
  returned: success
  type: list
  elements: str
  sample: [/srv/gb10/hf-cache/hub/models--Qwen--Qwen3-8B/blobs/3a5f0c]
root_fixed:
  description: Whether O(path) itself was (in check mode, would be) changed.
  returned: success
  type: bool
  sample: false
errors:
  description:
    - Entries that could not be read or changed (the first 100); the module fails when there
      is any. Vanished entries are not errors.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: Path of the entry.
      type: str
      sample: /srv/gb10/hf-cache/hub/version.txt
    error:
      description: Errno name and message.
      type: str
      sample: "EPERM: Operation not permitted"
error_count:
  description: How many entries could not be read or changed, including those beyond RV(errors).
  returned: always
  type: int
  sample: 0
skipped_mounts:
  description: Mount points (and bind-mounted files) below O(path), neither changed nor entered.
  returned: success
  type: list
  elements: str
  sample: [/srv/gb10/hf-cache/xet]
"""

# Imports follow the documentation blocks, as validate-modules requires.
from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.gb10.serving.plugins.module_utils._tree_owner import (  # noqa: E402
    TreeOwnerError,
    failure_message,
    repair_tree,
)

RESULT_KEYS = ("scanned", "fixed", "fixed_sample", "root_fixed", "errors", "error_count")


def summary(path, owner, group, scanned, wrong):
    """One side of the diff: counts, never the list of paths."""
    return {
        "path": path,
        "wanted": "%d:%d" % (owner, group),
        "scanned": scanned,
        "wrong_ownership": wrong,
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            owner=dict(type="int", required=True),
            group=dict(type="int", required=True),
            sample=dict(type="int", default=20),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    owner = module.params["owner"]
    group = module.params["group"]
    sample = module.params["sample"]
    for name, value in (("owner", owner), ("group", group), ("sample", sample)):
        if value < 0:
            module.fail_json(msg="%s must be 0 or more, got %d" % (name, value))

    try:
        report = repair_tree(path, owner, group, dry_run=module.check_mode, sample=sample)
    except TreeOwnerError as exc:
        module.fail_json(msg=str(exc), changed=False, errors=[], error_count=0)

    result = dict((key, getattr(report, key)) for key in RESULT_KEYS)
    result["skipped_mounts"] = report.skipped_mounts
    result["changed"] = report.fixed > 0
    if module._diff:
        # Before: what was wrong (fixed or failed). After: what is still wrong (failed).
        wrong_before = report.fixed + report.error_count
        result["diff"] = {
            "before_header": "%s (ownership)" % path,
            "after_header": "%s (ownership)" % path,
            "before": summary(path, owner, group, report.scanned, wrong_before),
            "after": summary(path, owner, group, report.scanned, report.error_count),
        }
    if report.skipped_mounts:
        mounts = report.skipped_mounts
        listed = ", ".join(mounts[:10]) + (", ..." if len(mounts) > 10 else "")
        module.warn(
            "left %d mount point(s) under %s alone, as they are other filesystems: %s. Run"
            " gb10.serving.tree_owner on each one that must be owned by %d:%d too."
            % (len(mounts), path, listed, owner, group)
        )
    if report.error_count:
        module.fail_json(msg=failure_message(path, report), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
