#!/usr/bin/python
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: hf_snapshot_info
short_description: Report what a Hugging Face hub cache holds of one revision of a repository
version_added: 0.1.0
description:
  - Reads the Hugging Face hub cache of the target, as C(huggingface_hub) lays it out
    (C(<hub>/models--<org>--<name>/) with C(blobs/), C(refs/) and C(snapshots/<commit>/)),
    resolves O(revision) to a commit and lists every file of that snapshot with its size
    and blob name, the snapshot symlinks whose blob is missing, and the C(.incomplete)
    blobs of downloads in progress or interrupted.
  - Register it on every node and compare the results with the
    P(gb10.serving.compare_snapshots#filter) filter, to check that all nodes hold the same
    revision with the same files and sizes before the engine starts.
  - A revision that is not in the cache is not a failure; RV(present) is V(false) and the
    caller decides to download. A cache that holds the revision in a state
    C(huggingface_hub) would not leave it complete (a ref that is not a commit hash, a ref
    without its snapshot, an empty snapshot, broken symlinks, C(.incomplete) blobs) also
    gives RV(present=false), with the reason in RV(problem).
  - Fails only on bad options, or when part of the cache exists but cannot be read
    (permissions); run the task as the user who owns the cache.
  - Only reads the target; never reports a change. It does not contact the Hub, hash file
    contents or know which files the revision has upstream.
author:
  - gb10.serving maintainers (@gb10)
extends_documentation_fragment:
  - gb10.serving.attributes
  - gb10.serving.attributes.info_module
options:
  cache_dir:
    description:
      - The Hugging Face home directory (E(HF_HOME), by default C(~/.cache/huggingface)),
        whose C(hub) subdirectory is the hub cache.
      - The hub cache itself (E(HF_HUB_CACHE), for example C(~/.cache/huggingface/hub)) is
        accepted too. It is recognised by holding the repository's directory, or
        C(models--*), C(datasets--*) or C(spaces--*) directories, while no C(hub)
        subdirectory exists. When neither is found, C(<cache_dir>/hub) is assumed (and
        RV(present) is V(false)).
      - RV(hub_dir) returns the hub cache that was used.
    type: path
    required: true
  repo_id:
    description:
      - The repository, as C(<org>/<name>) (for example
        V(deepseek-ai/DeepSeek-V4-Flash-DSpark)), or a bare C(<name>) for legacy
        repositories.
    type: str
    required: true
  revision:
    description:
      - A branch, a tag (which may contain C(/)), C(refs/pr/<n>), or a full 40-hex commit
        hash.
      - A branch or tag is resolved through C(refs/<revision>); a commit hash is used as it
        is when its snapshot exists. Abbreviated commit hashes are not resolved.
    type: str
    default: main
  repo_type:
    description:
      - The type of the repository, which selects the C(models--), C(datasets--) or
        C(spaces--) directory.
    type: str
    choices: [model, dataset, space]
    default: model
notes:
  - C(huggingface_hub) writes C(refs/<revision>) and creates C(snapshots/<commit>/) before it
    downloads, into C(blobs/<etag>.incomplete), and links a file into the snapshot only once
    its blob is complete. So a snapshot interrupted between two files looks complete on its
    own; comparing the nodes with P(gb10.serving.compare_snapshots#filter) catches a file
    that only some nodes hold.
  - C(.no_exist/) (files known not to exist upstream), C(.locks/) and blobs not linked from
    the snapshot are ignored.
seealso:
  - plugin: gb10.serving.compare_snapshots
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Read the model snapshot held on each node
  gb10.serving.hf_snapshot_info:
    cache_dir: /var/lib/gb10/huggingface
    repo_id: deepseek-ai/DeepSeek-V4-Flash-DSpark
    revision: main
  register: __engine_model_snapshot

- name: Stop unless every node holds the same files and sizes
  ansible.builtin.assert:
    that: __engine_model_differences | length == 0
    fail_msg: "The nodes' model caches differ: {{ __engine_model_differences | join('; ') }}"
  vars:
    __engine_model_differences: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts
         | map('extract', hostvars, '__engine_model_snapshot')))
         | gb10.serving.compare_snapshots }}
  run_once: true

- name: Read a dataset at a tag, from the hub cache directory itself
  gb10.serving.hf_snapshot_info:
    cache_dir: ~/.cache/huggingface/hub
    repo_id: org/eval-prompts
    repo_type: dataset
    revision: v1.0
  register: __engine_prompts_snapshot
"""

RETURN = r"""
present:
  description:
    - V(true) when O(revision) resolves to a commit whose snapshot holds at least one file,
      no broken symlink, and the repository has no C(.incomplete) blob.
  returned: always
  type: bool
  sample: true
commit:
  description: The commit O(revision) resolves to, V(null) when it does not resolve.
  returned: always
  type: str
  sample: 4c1a1d0f8e3b2a6d5c7e9f0a1b2c3d4e5f6a7b8c
files:
  description:
    - Path inside the repository (C(/)-separated) to size in bytes, read through the snapshot
      symlink; sorted by path. Broken symlinks are not included.
  returned: always
  type: dict
  sample:
    config.json: 1832
    model-00001-of-00046.safetensors: 5368709120
    tokenizer/vocab.json: 2776833
blobs:
  description:
    - Path inside the repository to the name of the blob its snapshot symlink points to
      (the etag; the sha256 of the content for LFS files, the git blob sha1 otherwise).
    - Files stored as regular files in the snapshot (no symlink support) have no entry.
  returned: always
  type: dict
  sample:
    config.json: 6f1a3b4f0d3b2e5c8a9e1f7d4c2b0a9e8d7c6b5a
    model-00001.safetensors: 3f9a0c4d6e2b1a8f7c5d3e9b0a4f6c2d1e8b7a5c9d0f3e6b2a1c4d7e8f9b0a3c
broken:
  description: Paths whose snapshot symlink leads to a missing blob (or not to a file), sorted.
  returned: always
  type: list
  elements: str
  sample: [model-00046-of-00046.safetensors]
incomplete:
  description:
    - Names of the repository's C(blobs/*.incomplete) files, of any revision, sorted; a
      download in progress or interrupted.
  returned: always
  type: list
  elements: str
  sample: [3f9a0c4d6e2b1a8f7c5d3e9b0a4f6c2d1e8b7a5c9d0f3e6b2a1c4d7e8f9b0a3c.incomplete]
total_bytes:
  description: Sum of the sizes in RV(files) (a blob linked twice counts twice).
  returned: always
  type: int
  sample: 246970138624
hub_dir:
  description: The hub cache that was read (see O(cache_dir)).
  returned: always
  type: str
  sample: /var/lib/gb10/huggingface/hub
repo_path:
  description: The repository's directory in the hub cache; it may not exist.
  returned: always
  type: str
  sample: /var/lib/gb10/huggingface/hub/models--deepseek-ai--DeepSeek-V4-Flash-DSpark
problem:
  description:
    - Why RV(present) is V(false) although the repository holds something for O(revision),
      that is a malformed ref, a ref without its snapshot, an empty snapshot, broken
      symlinks or C(.incomplete) blobs.
    - V(null) when RV(present) is V(true), and when the repository or the revision is simply
      not in the cache.
  returned: always
  type: str
  sample: "1 blob still downloading or interrupted: 3f9a...a3c.incomplete; download again to resume"
"""

# Imports follow the documentation blocks, as validate-modules requires.
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.gb10.serving.plugins.module_utils._hf_cache import (  # noqa: E402
    REPO_TYPES,
    HfCacheError,
    HfCacheReadError,
    check_revision,
    find_hub_dir,
    repo_dir,
    resolve_revision,
    snapshot_manifest,
)

# How many paths a problem message names before it says "and N more".
NAMED_IN_PROBLEM = 5


def _named(items):
    shown = ", ".join(items[:NAMED_IN_PROBLEM])
    if len(items) > NAMED_IN_PROBLEM:
        shown += " and %d more" % (len(items) - NAMED_IN_PROBLEM)
    return shown


def _plural(count, word):
    return "%d %s%s" % (count, word, "" if count == 1 else "s")


def assess(manifest):
    """(present, problem) of a SnapshotManifest."""
    problems = []
    if not manifest.files and not manifest.broken:
        problems.append(
            "snapshots/%s holds no files: its download has not completed a single file"
            % manifest.commit
        )
    if manifest.broken:
        problems.append(
            "%s lead to a missing blob (interrupted download or deleted blob): %s"
            % (_plural(len(manifest.broken), "snapshot symlink"), _named(manifest.broken))
        )
    if manifest.incomplete:
        problems.append(
            "%s still downloading or interrupted: %s; download again to resume"
            % (_plural(len(manifest.incomplete), "blob"), _named(manifest.incomplete))
        )
    if problems:
        return False, "; ".join(problems)
    return True, None


def inspect(cache_dir, repo_id, revision, repo_type):
    """The module's result; raises HfCacheReadError when the cache cannot be read."""
    folder = os.path.basename(repo_dir("", repo_id, repo_type))
    hub_dir = find_hub_dir(cache_dir, folder)
    repo_path = repo_dir(hub_dir, repo_id, repo_type)
    result = dict(
        changed=False,
        present=False,
        commit=None,
        files={},
        blobs={},
        broken=[],
        incomplete=[],
        total_bytes=0,
        hub_dir=hub_dir,
        repo_path=repo_path,
        problem=None,
    )
    if not os.path.isdir(repo_path):
        return result
    try:
        commit = resolve_revision(repo_path, revision)
        if commit is None:
            return result
        result["commit"] = commit
        manifest = snapshot_manifest(repo_path, commit)
    except HfCacheReadError:
        raise
    except HfCacheError as exc:
        result["problem"] = str(exc)
        return result
    result.update(manifest.to_dict())
    result["present"], result["problem"] = assess(manifest)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cache_dir=dict(type="path", required=True),
            repo_id=dict(type="str", required=True),
            revision=dict(type="str", default="main"),
            repo_type=dict(type="str", default="model", choices=list(REPO_TYPES)),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        check_revision(params["revision"])
        repo_dir("", params["repo_id"], params["repo_type"])
    except HfCacheError as exc:
        module.fail_json(msg=str(exc))
    try:
        result = inspect(
            params["cache_dir"], params["repo_id"], params["revision"], params["repo_type"]
        )
    except HfCacheReadError as exc:
        module.fail_json(msg=str(exc), path=exc.path)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
