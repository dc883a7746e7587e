"""An emulated cluster for one test module: made before its first test, removed after its last."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from ftslide.errors import FtslideError
from ftslide.jobmgr import cluster as netcluster


@contextmanager
def module_cluster(prefix: str, nodes: int, slots: int) -> Iterator[netcluster.Cluster]:
    """A ``nodes``-node cluster with ``slots`` slots a node, named ``prefix`` and six random hex digits
    (several test modules, or runs, can have one at a time); the test is skipped without root."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    name = f"{prefix}{uuid.uuid4().hex[:6]}"
    made = netcluster.up(name, nodes=nodes, slots=slots)
    try:
        yield made
    finally:
        try:
            netcluster.down(name)
        except FtslideError:
            pass
