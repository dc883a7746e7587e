"""SimGrid platform files and hostfiles, generated as data from the topology model.

The platform is one SimGrid cluster whose routing is the topology's routing link
for link (``ftslide.sliding.topology``): a torus gets its dimensions in routing
order, a mesh is embedded in a torus of 2n - 1 positions per dimension. SimGrid
names the host at position p of the cluster after the p-th radical; the radicals
are listed so that the host named ``h<i>`` is host i of the topology (SimGrid
numbers positions first dimension fastest, the topology last dimension fastest),
and spare positions of an embedded mesh get the names after the last host.

Errors and cost: no function raises for a valid Topology; each costs O(hosts + links).
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

from ..sliding.topology import Topology
from .network import NetParams

__all__ = ["radicals", "platform_xml", "hostfile", "SEND_WORK_PROPERTY"]

HOST_PREFIX = "h"
SEND_WORK_PROPERTY = "ftslide_send_work"  # the host property ftsim_kernels.c reads


def radicals(topology: Topology) -> str:
    """SimGrid's radical list: the name number of each position, as ranges."""
    names = [-1] * topology.sim_hosts
    for host in range(topology.hosts):
        names[topology.sim_position(host)] = host
    extra = topology.hosts
    for pos, name in enumerate(names):
        if name < 0:
            names[pos] = extra
            extra += 1
    ranges: list[str] = []
    start = prev = names[0]
    for name in names[1:] + [None]:
        if name is not None and name == prev + 1:
            prev = name
            continue
        ranges.append(str(start) if start == prev else f"{start}-{prev}")
        if name is not None:
            start = prev = name
    return ",".join(ranges)


def platform_xml(topology: Topology, net: NetParams) -> str:
    """A SimGrid 4.1 platform: one cluster zone with the topology's links and routing.

    Links are split-duplex (each direction its own bandwidth), as the analytic
    model assumes; a loopback serves ranks sharing a host (K ranks per node,
    shrink), so that their messages load no network link.
    """
    attrs = net.simgrid()
    cluster = {
        "id": "ftsim", "prefix": HOST_PREFIX, "suffix": "",
        "radical": radicals(topology),
        "speed": attrs["speed"], "bw": attrs["bw"], "lat": attrs["lat"],
        "loopback_bw": f"{net.loopback():.6g}Bps", "loopback_lat": "0s",
        "topology": topology.sim_kind, "topo_parameters": topology.sim_parameters,
        "sharing_policy": "SPLITDUPLEX",
    }
    body = " ".join(f"{k}={quoteattr(v)}" for k, v in cluster.items())
    order = f", routed {topology.order}" if topology.order else ""
    # The CPU work per byte sent, as a property every host of the cluster gets: the SMPI kernels
    # read it (simulations/smpi/ftsim_kernels.c), so the platform carries its calibration.
    element = f"  <cluster {body}/>\n" if not net.send_work else (
        f"  <cluster {body}>\n    <prop id=\"{SEND_WORK_PROPERTY}\" value=\"{net.send_work:.6g}\"/>\n"
        "  </cluster>\n")
    return ("<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            f"<!-- ftslide: {topology}{order} -->\n"
            "<platform version=\"4.1\">\n"
            f"{element}"
            "</platform>\n")


def hostfile(rank_hosts: tuple[int, ...] | list[int]) -> str:
    """One line per rank, in rank order: the SimGrid host name of its host."""
    return "".join(f"{HOST_PREFIX}{h}\n" for h in rank_hosts)
