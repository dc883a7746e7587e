"""Where ranks run: the sliding core's node grid laid onto a topology's hosts.

The substitution methods work on a 2D/3D grid of nodes (``ftslide.sliding.core``);
node i of the grid runs on host i of the topology (``Layout.net``). On a 2D/3D
torus or mesh the grid defaults to the topology itself, and both number row-major
with the last dimension fastest, so node (x, y, z) runs on the host at (x, y, z);
on other topologies (fat-tree, a torus of another dimension count) the grid is
given explicitly and fills the first hosts. With K ranks per node every node
runs a block of the rank grid (``core.make_block``): the K ranks of a node run
on its host, and the kernels' rank grid is the logical grid times the block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..sliding import core as sc
from ..sliding.topology import Topology

__all__ = ["Placement", "make_placement"]


@dataclass(frozen=True)
class Placement:
    """A topology and the sliding core's layout on it (node i on host i); ``block`` (None: one rank
    per node) is the block of ranks each node runs."""

    topology: Topology
    layout: sc.Layout
    block: tuple[int, ...] | None = None

    @property
    def spare_nodes(self) -> int:
        return self.layout.spare_nodes

    @property
    def ranks_per_node(self) -> int:
        return math.prod(self.block or ())

    def hosts(self, mapping: list[int] | tuple[int, ...]) -> tuple[int, ...]:
        """Host of each rank for a node-rank -> node map from the sliding core (with a block, the K
        ranks of a node on its host: ``core.rank_nodes``)."""
        return tuple(mapping) if self.block is None else tuple(sc.rank_nodes(self.layout, mapping, self.block))

    def initial_hosts(self) -> tuple[int, ...]:
        return self.hosts(self.layout.initial_map())

    def stencil_dims(self) -> tuple[int, ...]:
        """The application's rank grid, first dimension slowest: the logical grid, times the block."""
        if self.block is None:
            return self.layout.logical
        return tuple(n * b for n, b in zip(self.layout.logical, self.block))

    @property
    def stencil_periodic(self) -> bool:
        return self.layout.grid.periodic


def make_placement(topology: Topology, grid: str | None, spares: str, expect: int = 0,
                   ranks_per_node: int = 1, block: str | None = None) -> Placement:
    """Validate grid and spares against the topology and lay the grid onto its hosts: the layout of
    ``ftslide.sliding.core.make_layout`` (grid None: the topology itself; ``expect``: routed's spare
    budget), kept with its topology; with ``ranks_per_node`` K > 1 (or a ``block``), each node runs a
    block of K ranks (``core.make_block``). Raises SlideError (one line). Cost O(1)."""
    layout = sc.make_layout(grid, spares, topology, expect)
    if ranks_per_node == 1 and block is None:
        return Placement(topology, layout)
    return Placement(topology, layout, sc.make_block(layout, ranks_per_node, block))
