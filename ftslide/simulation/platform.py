"""SimGrid platform files and hostfiles, generated as data."""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

from ..sliding.topology import Topology
from .network import NetParams

HOST_PREFIX = "h"


def platform_xml(topology: Topology, net: NetParams) -> str:
    """A SimGrid 4.1 platform: one cluster zone with the topology's links.

    Links are split-duplex (each direction its own bandwidth), as the analytic
    model assumes; a loopback serves ranks sharing a host (shrink).
    """
    kind = {"fattree": "FAT_TREE", "dragonfly": "DRAGONFLY"}.get(topology.kind, "TORUS")
    params = topology.sim_parameters()
    attrs = net.simgrid()
    cluster = {
        "id": "ftsim", "prefix": HOST_PREFIX, "suffix": "",
        "radical": f"0-{topology.sim_hosts - 1}",
        "speed": attrs["speed"], "bw": attrs["bw"], "lat": attrs["lat"],
        "loopback_bw": f"{net.bw * 20:.6g}Bps", "loopback_lat": "0s",
        "topology": kind, "topo_parameters": params, "sharing_policy": "SPLITDUPLEX",
    }
    body = " ".join(f"{k}={quoteattr(v)}" for k, v in cluster.items())
    return ("<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            f"<!-- ftslide simulate: {topology} -->\n"
            "<platform version=\"4.1\">\n"
            f"  <cluster {body}/>\n"
            "</platform>\n")


def hostfile(topology: Topology, rank_hosts: tuple[int, ...] | list[int]) -> str:
    """One line per rank, in rank order: the SimGrid host name of its host."""
    return "".join(f"{HOST_PREFIX}{topology.sim_host(h)}\n" for h in rank_hosts)
