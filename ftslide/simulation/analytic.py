"""Analytic congestion model: link loads and hops of a placed communication pattern.

The network is the topology's NetworkX graph (``Topology.graph``): one edge per
directed link. Every message is routed as SimGrid routes it (``Topology.route``:
dimension order on torus/mesh, up/down d-mod-k on the fat-tree) and adds 1 to
the load of each link it crosses. From the loads:

* ``load_max`` -- most messages sharing one directed link;
* ``collisions`` -- directed links carrying more than one message;
* ``hops_max`` / ``hops_mean`` -- route lengths in links (0 for ranks sharing a host);
* ``time`` -- a completion-time estimate: per message, its route latency plus
  ``bytes * (highest load on its route) / bandwidth``; a round takes its slowest
  message, a pattern the sum of its rounds. It ranks mappings without a simulation;
  SimGrid's max-min sharing refines it (docs/simulations.md compares the two).

Patterns (messages per round):

* ``stencil`` -- one round: each rank sends one message to each logical
  neighbour (5-point in 2D, 7-point in 3D; wrap-around when periodic, for
  dimensions of size >= 3), as the SMPI stencil kernel does;
* ``barrier`` -- dissemination rounds, rank r to r + 2^k (mod n), 0 bytes: the
  message pattern of SMPI's ``ompi_bruck`` barrier, which the simulations select;
* ``allreduce`` -- the message pattern of SMPI's ``rdb`` allreduce, which the
  simulations select: with p the largest power of two <= n and m = n - p, even
  ranks below 2m first send to the next rank; p participants then exchange the
  full vector in log2(p) recursive-doubling rounds; finally odd ranks below 2m
  send the result back.
  Rounds are treated as separated (no overlap between rounds), and a round's
  time ignores the per-message software costs SimGrid does not model either.

Cost: O(messages x route length), about 0.3 s for the stencil at 12x12x12.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import networkx as nx

from ..errors import FtslideError
from ..sliding.topology import Link, Topology
from .network import NetParams


@dataclass(frozen=True)
class Congestion:
    """Result of the analytic model for one placement and pattern."""

    messages: int
    hops_max: int
    hops_mean: float
    load_max: int
    collisions: int
    links_used: int
    time: float


def stencil_messages(dims: Sequence[int], periodic: bool) -> list[tuple[int, int]]:
    """(src, dst) rank pairs of one halo exchange on a row-major logical grid."""
    strides = [1] * len(dims)
    for d in range(len(dims) - 2, -1, -1):
        strides[d] = strides[d + 1] * dims[d + 1]
    total = strides[0] * dims[0]
    out = []
    for r in range(total):
        rest = r
        coords = []
        for d in range(len(dims)):
            coords.append(rest // strides[d])
            rest %= strides[d]
        for d, n in enumerate(dims):
            for step in (-1, 1):
                c = coords[d] + step
                if not 0 <= c < n:
                    if not (periodic and n >= 3):
                        continue
                    c %= n
                out.append((r, r + (c - coords[d]) * strides[d]))
    return out


def collective_rounds(pattern: str, ranks: int) -> list[list[tuple[int, int]]]:
    """Message rounds approximating a barrier or an allreduce on ``ranks`` ranks."""
    rounds: list[list[tuple[int, int]]] = []
    if pattern == "barrier":
        k = 1
        while k < ranks:
            rounds.append([(r, (r + k) % ranks) for r in range(ranks)])
            k *= 2
    elif pattern == "allreduce":
        pof2 = 1
        while pof2 * 2 <= ranks:
            pof2 *= 2
        rem = ranks - pof2

        def real(n: int) -> int:  # rank of the n-th participant of the doubling phase
            return n * 2 + 1 if n < rem else n + rem

        if rem:
            rounds.append([(r, r + 1) for r in range(0, 2 * rem, 2)])
        k = 1
        while k < pof2:
            rounds.append([(real(n), real(n ^ k)) for n in range(pof2)])
            k *= 2
        if rem:
            rounds.append([(r, r - 1) for r in range(1, 2 * rem, 2)])
    else:
        raise FtslideError(f"unknown pattern '{pattern}': choose stencil, barrier or allreduce")
    return rounds


@lru_cache(maxsize=8)
def _graph(topology: Topology) -> nx.MultiDiGraph:
    return topology.graph()


@lru_cache(maxsize=8)
def _routes(topology: Topology) -> dict[tuple[int, int], list[Link]]:
    """Checked routes of a topology, shared by every placement evaluated on it."""
    return {}


def congestion(topology: Topology, rank_hosts: Sequence[int],
               rounds: Sequence[Sequence[tuple[int, int]]], nbytes: int,
               net: NetParams, check_graph: bool = True) -> Congestion:
    """Loads, hops and estimated time of message rounds between placed ranks.

    ``rank_hosts[r]`` is the host of rank r; every route is checked against the
    topology's graph (``check_graph``) so a routing bug cannot go unnoticed.
    """
    graph = _graph(topology) if check_graph else None
    route_cache = _routes(topology) if check_graph else {}
    total_time = 0.0
    all_loads: Counter[Link] = Counter()
    hops_max, hops_sum, messages, load_max = 0, 0, 0, 0
    for msgs in rounds:
        loads: Counter[Link] = Counter()
        routes = []
        for src, dst in msgs:
            a, b = rank_hosts[src], rank_hosts[dst]
            route = route_cache.get((a, b))
            if route is None:
                route = topology.route(a, b)
                if graph is not None:
                    for link in route:
                        if not graph.has_edge(*link):
                            raise FtslideError(f"internal error: route {a}->{b} uses {link}, "
                                               f"not a link of {topology}")
                route_cache[(a, b)] = route
            routes.append(route)
            loads.update(route)
            hops_max = max(hops_max, len(route))
            hops_sum += len(route)
            messages += 1
        slowest = 0.0
        for route in routes:
            if route:
                worst = max(loads[link] / topology.capacity(link) for link in route)
                t = len(route) * net.lat + nbytes * worst / net.bw
            else:
                t = nbytes / (net.bw * 20)  # loopback, as in the platform
            slowest = max(slowest, t)
        total_time += slowest
        if loads:
            load_max = max(load_max, max(loads.values()))
        all_loads.update(loads)
    # Collisions and links used are reported per round summed over rounds for
    # collectives; for the one-round stencil they are simply the round's values.
    collisions = sum(1 for v in all_loads.values() if v > 1) if len(rounds) == 1 else \
        _round_collisions(topology, rank_hosts, rounds, route_cache)
    return Congestion(messages, hops_max, hops_sum / messages if messages else 0.0, load_max,
                      collisions, len(all_loads), total_time)


def _round_collisions(topology: Topology, rank_hosts: Sequence[int],
                      rounds: Sequence[Sequence[tuple[int, int]]],
                      routes: dict[tuple[int, int], list[Link]]) -> int:
    total = 0
    for msgs in rounds:
        loads: Counter[Link] = Counter()
        for src, dst in msgs:
            loads.update(routes[(rank_hosts[src], rank_hosts[dst])])
        total += sum(1 for v in loads.values() if v > 1)
    return total


def pattern_congestion(topology: Topology, rank_hosts: Sequence[int], pattern: str,
                       stencil_dims: Sequence[int], periodic: bool, nbytes: int,
                       net: NetParams) -> Congestion:
    """The model for one of the kernels (``stencil``, ``barrier``, ``allreduce``)."""
    if pattern == "stencil":
        rounds = [stencil_messages(stencil_dims, periodic)]
    else:
        rounds = collective_rounds(pattern, len(rank_hosts))
    return congestion(topology, rank_hosts, rounds, nbytes, net)
