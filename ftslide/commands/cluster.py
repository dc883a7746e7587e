"""ftslide cluster: an emulated multi-node cluster from network namespaces (up, down, kill-node, status)."""

from __future__ import annotations

import argparse

from ..jobmgr import cluster as netcluster
from ..errors import FtslideError
from ..sliding.topology import GRAMMAR
from ..ui.table import print_table

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "cluster"
HELP = ("create and remove an emulated cluster of network namespaces on this machine "
        "(addresses in 198.18.0.0/15), kill all processes of nodes, show clusters")


def _name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default=netcluster.DEFAULT_NAME,
                        help=f"cluster name, prefix of its namespaces (default {netcluster.DEFAULT_NAME})")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    up = sub.add_parser("up", help="create the nodes (namespaces <name>-n0..), switches, links, hostfile, "
                        "launch agent",
                        description="create an emulated cluster: one network namespace per node (node K at "
                        "198.18.0.0+K+1) and per switch, joined as the topology says and routed exactly as the "
                        "topology model routes (the routes of ftslide map and simulate), a hostfile and a launch "
                        "agent for mpirun")
    _name(up)
    up.add_argument("--nodes", type=int, metavar="N",
                    help="number of nodes (1..1000); needed with a bare star or ring, else it must match the topology")
    up.add_argument("--topology", default="star", metavar="SPEC",
                    help=f"the network: star (one bridge, the default), ring, or a spec: {GRAMMAR} (no "
                    "dragonfly, no parallel fat-tree links); node K is host K of the topology (row-major, last "
                    "dimension fastest)")
    up.add_argument("--route-order", default="", metavar="ORDER",
                    help="dimension order of torus/mesh routing, a permutation such as xyz (the default) or zyx")
    up.add_argument("--rate", metavar="RATE", help="rate limit of every link in each direction, a rate "
                    "such as 1gbit or 100mbit (HTB, small packets first); default none")
    up.add_argument("--delay", metavar="DELAY", help="delay of every link in each direction, a duration such "
                    "as 1ms or 200us (netem); default none")
    up.add_argument("--slots", type=int, default=2, metavar="S", help="slots per node in the hostfile (default 2)")
    down = sub.add_parser("down", help="remove every namespace, link and file of a cluster, also after a crash")
    _name(down)
    kill = sub.add_parser("kill-node", help="SIGKILL every process of one or more nodes at once")
    _name(kill)
    kill.add_argument("nodes", type=int, nargs="+", metavar="K", help="node number (0..N-1)")
    status = sub.add_parser("status", help="list clusters, or the nodes of one with --name")
    status.add_argument("--name", help="show this cluster's nodes")


def run(args: argparse.Namespace) -> int:
    if args.action == "up":
        cluster = netcluster.up(args.name, args.nodes, args.topology, args.rate, args.slots, args.delay,
                                args.route_order)
        rate = f", links limited to {cluster.rate}" if cluster.rate else ""
        delay = f", {cluster.delay} per link" if cluster.delay else ""
        switches = len(cluster.namespaces) - cluster.nodes
        print(f"cluster {cluster.name}: {cluster.nodes} node(s) and {switches} switch(es), "
              f"{cluster.topology}{rate}{delay}, "
              f"{netcluster.address(0)}..{netcluster.address(cluster.nodes - 1)}")
        print(f"hostfile {cluster.hostfile}")
        print(f"run a job: ftslide run --cluster {cluster.name} -np {cluster.nodes * cluster.slots} PROGRAM")
        return 0
    if args.action == "down":
        removed = netcluster.down(args.name)
        print(f"cluster {args.name}: removed {len(removed)} namespace(s) and its files")
        return 0
    if args.action == "kill-node":
        killed = netcluster.kill_nodes(args.name, args.nodes)
        print(f"cluster {args.name}: node {' '.join(map(str, args.nodes))}: killed {killed} process(es)")
        return 0
    if args.action == "status":
        return _status(args.name)
    raise FtslideError("give an action: up, down, kill-node or status (see 'ftslide cluster --help')")


def _status(name: str | None) -> int:
    present = netcluster.existing_namespaces()
    if name is None:
        rows = [(c.name, c.nodes, c.topology, c.rate or "-", "yes" if c.complete else "NO (run down)",
                 sum(ns in present for ns in c.namespaces)) for c in netcluster.clusters()]
        if not rows:
            print("no clusters")
            return 0
        print_table(["name", "nodes", "topology", "rate", "complete", "namespaces"], rows)
        return 0
    cluster = netcluster.load(name)
    rows = []
    for k in range(cluster.nodes):
        netns = cluster.namespace(k)
        up = netns in present
        rows.append((k, netns, netcluster.address(k), "up" if up else "MISSING",
                     len(netcluster.namespace_pids(netns)) if up else "-"))
    print_table(["node", "namespace", "address", "state", "processes"], rows)
    return 0
