# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine image pinned to one digest, and the nodes that do not hold the same image.

Pure Python, no Ansible imports. A recipe names its image by tag (``repo:tag``), which
can point at another image tomorrow or on another node; the engine role resolves it on
each node, from what ``docker image inspect`` says of the local image (``Id``,
``RepoDigests``), to a reference that names exactly one image:

- ``repo@sha256:<manifest digest>`` when the image came from a registry (its
  ``RepoDigests`` holds the repository);
- the image ID ``sha256:<config digest>`` when it was built on the node and never pushed
  (the lab's engine image): no registry digest exists, the ID is the content's digest.

A recipe that already names ``repo@sha256:...`` is pinned as it is. The pinned reference is
what the containers are started from and what the deployment's fingerprint holds; every
node must resolve to the same one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import List, Optional

_DIGEST_PREFIX = "sha256:"
# Docker Hub's names as `docker pull` accepts them and as RepoDigests writes them.
_HUB_PREFIXES = ("docker.io/", "index.docker.io/", "registry-1.docker.io/")


def split_reference(reference: str):
    """``repo[:tag][@digest]`` -> (repository, tag or '', digest or '')."""
    name, _sep, digest = reference.partition("@")
    # A ':' after the last '/' is the tag's; one before it is a registry's port.
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        return name[:colon], name[colon + 1 :], digest
    return name, "", digest


def _normal(repository: str) -> str:
    """A repository as Docker compares names: Hub prefixes and ``library/`` left out."""
    for prefix in _HUB_PREFIXES:
        if repository.startswith(prefix):
            repository = repository[len(prefix) :]
            break
    if repository.startswith("library/"):
        repository = repository[len("library/") :]
    return repository


def pin(reference: str, image: Optional[Mapping]) -> dict:
    """The pinned reference of ``reference`` given the node's image (None: not on the node).

    Returns ``reference``, ``pinned`` (empty when the image is not on the node) and ``by``:
    ``digest`` (the recipe named one), ``registry digest``, ``image id`` or ``absent``.
    """
    repository, _tag, digest = split_reference(reference)
    if digest:
        return {"reference": reference, "pinned": reference, "by": "digest"}
    if not image:
        return {"reference": reference, "pinned": "", "by": "absent"}
    for entry in image.get("RepoDigests") or []:
        name, _sep, entry_digest = str(entry).partition("@")
        if _normal(name) == _normal(repository) and entry_digest.startswith(_DIGEST_PREFIX):
            return {
                "reference": reference,
                "pinned": f"{repository}@{entry_digest}",
                "by": "registry digest",
            }
    image_id = str(image.get("Id") or "")
    if not image_id.startswith(_DIGEST_PREFIX):
        raise ValueError(f"the image {reference} has no ID in its inspect output")
    return {"reference": reference, "pinned": image_id, "by": "image id"}


def pin_problems(pins: Mapping) -> List[str]:
    """{node: pin()} -> one message naming the nodes whose image differs, else [].

    Nodes without the image (check mode before the first pull) are left out: only a real
    run pulls, and then every node has it.
    """
    found = {node: p["pinned"] for node, p in pins.items() if p.get("pinned")}
    if len(set(found.values())) <= 1:
        return []
    references = sorted({p["reference"] for p in pins.values()})
    by_image: dict = {}
    for node, pinned in found.items():
        by_image.setdefault(pinned, []).append(str(node))
    # The image most nodes hold first; the odd ones out after it.
    groups = sorted(by_image.items(), key=lambda item: (-len(item[1]), item[1]))
    held = "; ".join(f"{', '.join(sorted(nodes))} {pinned}" for pinned, nodes in groups)
    odd = sorted(node for _pinned, nodes in groups[1:] for node in nodes)
    repository = split_reference(references[0])[0]
    return [
        f"The engine image (vllm_recipe.container {', '.join(references)}) is not the same "
        f"image on every node: {held}. The engines of one deployment must run one image; "
        f"{', '.join(odd)} differ{'s' if len(odd) == 1 else ''}. Pull the same image on "
        f"every node (docker pull {repository}@sha256:<digest>, or docker save and load), or "
        f"pin vllm_recipe.container to one digest ({repository}@sha256:<digest>)."
    ]
