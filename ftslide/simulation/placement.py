"""Where ranks run: the sliding core's node grid laid onto a topology's hosts.

The substitution methods work on a 2D/3D grid of nodes (``ftslide.sliding.core``);
node i of the grid runs on host i of the topology (``Layout.net``). On a 2D/3D
torus or mesh the grid defaults to the topology itself, and both number row-major
with the last dimension fastest, so node (x, y, z) runs on the host at (x, y, z);
on other topologies (fat-tree, a torus of another dimension count) the grid is
given explicitly and fills the first hosts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..sliding import core as sc
from ..sliding.topology import Topology

__all__ = ["Placement", "make_placement"]


@dataclass(frozen=True)
class Placement:
    """A topology and the sliding core's layout on it (node i on host i)."""

    topology: Topology
    layout: sc.Layout

    @property
    def spare_nodes(self) -> int:
        return self.layout.spare_nodes

    @staticmethod
    def hosts(mapping: list[int] | tuple[int, ...]) -> tuple[int, ...]:
        """Host of each rank for a rank -> node map from the sliding core."""
        return tuple(mapping)

    def initial_hosts(self) -> tuple[int, ...]:
        return self.hosts(self.layout.initial_map())

    def stencil_dims(self) -> tuple[int, ...]:
        """The application's logical grid (ranks), first dimension slowest."""
        return self.layout.logical

    @property
    def stencil_periodic(self) -> bool:
        return self.layout.grid.periodic


def make_placement(topology: Topology, grid: str | None, spares: str, expect: int = 0) -> Placement:
    """Validate grid and spares against the topology and lay the grid onto its hosts: the layout of
    ``ftslide.sliding.core.make_layout`` (grid None: the topology itself; ``expect``: routed's spare
    budget), kept with its topology. Raises SlideError (one line). Cost O(1)."""
    return Placement(topology, sc.make_layout(grid, spares, topology, expect))
