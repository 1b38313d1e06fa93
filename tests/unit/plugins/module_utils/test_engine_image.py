"""_engine_image: a recipe's image reference pinned per node, and the nodes that differ."""

from __future__ import annotations

import pytest
from ansible_collections.gb10.serving.plugins.module_utils._engine_image import (
    pin,
    pin_problems,
    split_reference,
)

# `docker image inspect gb10-lab-engine:lab` in the lab (built here, never pushed): Id,
# RepoTags and RepoDigests as Docker 27 prints them.
LAB_ID = "sha256:53e88c16d04677befdc381d8699120459938a1dac89c41403737394680e5dec9"
LAB_IMAGE = {
    "Id": LAB_ID,
    "RepoTags": ["gb10-lab-engine:aa82489a58b5", "gb10-lab-engine:lab"],
    "RepoDigests": [],
}
# A pulled image: RepoDigests holds repo@<manifest digest> (Docker Hub names without
# docker.io/), one entry per repository the image was pulled from.
DIGEST_A = "sha256:" + "a1" * 32
DIGEST_B = "sha256:" + "b2" * 32
PULLED = {
    "Id": "sha256:" + "c3" * 32,
    "RepoTags": ["aidendle94/sparkrun-vllm-ds4-gb10:production-3.7"],
    "RepoDigests": [f"aidendle94/sparkrun-vllm-ds4-gb10@{DIGEST_A}"],
}
TAG = "aidendle94/sparkrun-vllm-ds4-gb10:production-3.7"
REPO = "aidendle94/sparkrun-vllm-ds4-gb10"


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("org/vllm:1.0", ("org/vllm", "1.0", "")),
        ("org/vllm", ("org/vllm", "", "")),
        ("registry.lan:5000/org/vllm", ("registry.lan:5000/org/vllm", "", "")),
        ("registry.lan:5000/org/vllm:2", ("registry.lan:5000/org/vllm", "2", "")),
        (f"org/vllm:1.0@{DIGEST_A}", ("org/vllm", "1.0", DIGEST_A)),
        (f"org/vllm@{DIGEST_A}", ("org/vllm", "", DIGEST_A)),
    ],
)
def test_references_split_as_docker_reads_them(reference, expected):
    assert split_reference(reference) == expected


@pytest.mark.parametrize(
    ("reference", "image", "pinned", "by"),
    [
        # The field report's image, pulled from Docker Hub.
        (TAG, PULLED, f"{REPO}@{DIGEST_A}", "registry digest"),
        # Named with docker.io/ in the recipe; RepoDigests leaves the prefix out.
        (f"docker.io/{TAG}", PULLED, f"docker.io/{REPO}@{DIGEST_A}", "registry digest"),
        # An official image: library/ in one spelling only.
        (
            "library/ubuntu:24.04",
            {"Id": "sha256:" + "d4" * 32, "RepoDigests": [f"ubuntu@{DIGEST_B}"]},
            f"library/ubuntu@{DIGEST_B}",
            "registry digest",
        ),
        # Built on the node, never pushed: the image ID is its digest.
        ("gb10-lab-engine:lab", LAB_IMAGE, LAB_ID, "image id"),
        # Retagged from another repository: that repository's digest does not name this one.
        (
            "mirror.lan/vllm:1",
            {"Id": "sha256:" + "e5" * 32, "RepoDigests": [f"{REPO}@{DIGEST_A}"]},
            "sha256:" + "e5" * 32,
            "image id",
        ),
        # Pinned in the recipe already: kept as it is.
        (f"{REPO}@{DIGEST_B}", PULLED, f"{REPO}@{DIGEST_B}", "digest"),
        # Not on the node (check mode before the first pull).
        (TAG, None, "", "absent"),
    ],
)
def test_a_reference_is_pinned_to_the_image_the_node_holds(reference, image, pinned, by):
    assert pin(reference, image) == {"reference": reference, "pinned": pinned, "by": by}


def test_an_image_without_an_id_is_refused():
    with pytest.raises(ValueError, match="the image org/vllm:1 has no ID"):
        pin("org/vllm:1", {"RepoDigests": []})


def test_the_same_image_on_every_node_passes():
    pins = {node: pin(TAG, PULLED) for node in ("node0", "node1", "node2")}
    assert pin_problems(pins) == []
    # A node without the image yet (check mode) is not compared.
    assert pin_problems({**pins, "node3": pin(TAG, None)}) == []


def test_nodes_that_hold_another_image_are_named_with_the_fix():
    other = {**PULLED, "RepoDigests": [f"{REPO}@{DIGEST_B}"]}
    pins = {
        "node0": pin(TAG, PULLED),
        "node1": pin(TAG, PULLED),
        "node2": pin(TAG, other),
    }
    assert pin_problems(pins) == [
        f"The engine image (vllm_recipe.container {TAG}) is not the same image on every node: "
        f"node0, node1 {REPO}@{DIGEST_A}; node2 {REPO}@{DIGEST_B}. The engines of one "
        "deployment must run one image; node2 differs. Pull the same image on every node "
        f"(docker pull {REPO}@sha256:<digest>, or docker save and load), or pin "
        f"vllm_recipe.container to one digest ({REPO}@sha256:<digest>)."
    ]


def test_two_nodes_that_differ_are_both_named():
    pins = {"node0": pin(TAG, PULLED), "node1": pin(TAG, {**LAB_IMAGE, "RepoDigests": []})}
    (message,) = pin_problems(pins)
    assert f"node0 {REPO}@{DIGEST_A}; node1 {LAB_ID}." in message
    assert "node1 differs." in message
