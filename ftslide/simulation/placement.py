"""Where ranks run: the sliding core's node grid laid onto a topology's hosts.

The substitution methods work on a 2D/3D grid of nodes (``sliding_core``); a
placement says which host of the topology each grid node is. On a 2D/3D torus or
mesh the grid defaults to the topology itself (node (x, y, z) on the host at
(x, y, z)); on other topologies (fat-tree, a torus of other dimension count) the
grid is given explicitly and node ``i`` (row-major, last dimension fastest) runs
on host ``i``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..sliding import core as sc
from ..errors import FtslideError
from ..sliding.topology import Topology


@dataclass(frozen=True)
class Placement:
    """A topology, the sliding core's layout on it, and node -> host."""

    topology: Topology
    layout: sc.Layout
    node_host: tuple[int, ...]

    @property
    def spare_nodes(self) -> int:
        return self.layout.nodes - self.layout.ranks

    def hosts(self, mapping: list[int] | tuple[int, ...]) -> tuple[int, ...]:
        """Host of each rank for a rank -> node map from the sliding core."""
        return tuple(self.node_host[n] for n in mapping)

    def initial_hosts(self) -> tuple[int, ...]:
        return self.hosts(self.layout.initial_map())

    def stencil_dims(self) -> tuple[int, ...]:
        """The application's logical grid (ranks), first dimension slowest."""
        return self.layout.logical

    @property
    def stencil_periodic(self) -> bool:
        return self.layout.grid.periodic


def make_placement(topology: Topology, grid: str | None, spares: str) -> Placement:
    """Validate grid and spares against the topology and lay the grid onto its hosts."""
    if grid is None:
        if topology.kind in ("torus", "mesh") and len(topology.dims) in (2, 3):
            grid = f"{topology.kind}:" + "x".join(map(str, topology.dims))
        else:
            raise FtslideError(f"topology {topology} is not a 2D or 3D torus or mesh: give the "
                               f"stencil's node grid with --grid, e.g. --grid torus:8x8x8")
    layout = sc.make_layout(grid, spares)
    if layout.nodes > topology.hosts:
        raise FtslideError(f"grid {layout.grid} has {layout.nodes} nodes but topology {topology} "
                           f"has only {topology.hosts} hosts: use a smaller --grid or a larger "
                           f"--topology")
    same_shape = (topology.kind in ("torus", "mesh")
                  and tuple(topology.dims) == tuple(layout.grid.sizes))
    if same_shape:
        node_host = tuple(topology.host_at(layout.coords(n)) for n in range(layout.nodes))
    else:
        node_host = tuple(range(layout.nodes))
    return Placement(topology, layout, node_host)
