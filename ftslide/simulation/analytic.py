"""Analytic congestion model: link loads and hops of a placed communication pattern.

Every message is routed by the topology model (``Topology.route_round``, the C
core's routing: dimension order on torus/mesh, up/down d-mod-k on the fat-tree,
SimGrid's minimal dragonfly routing) and adds 1 to the load of each link it
crosses. From the loads:

* ``load_max`` -- most messages sharing one directed link;
* ``collisions`` -- directed links carrying more than one message (summed over the
  rounds of a collective);
* ``hops_max`` / ``hops_mean`` -- route lengths in links (0 for ranks sharing a host);
* ``time`` -- a completion-time estimate: per message, its route latency plus
  ``bytes * (highest load / capacity on its route) / bandwidth``; a round takes its
  slowest message, a pattern the sum of its rounds. It ranks mappings without a
  simulation; SimGrid's max-min sharing refines it (docs/simulations.md compares the two).

Patterns (messages per round):

* ``stencil`` -- one round: each rank sends one message to each logical
  neighbour (5-point in 2D, 7-point in 3D; wrap-around when periodic, for
  dimensions of size >= 3), the sliding core's own stencil (``stencil_messages``);
* ``phased`` -- the same messages in one round per logical dimension, x first
  (the exchange many stencil codes do: x halos, then y, then z);
* ``barrier`` -- dissemination rounds, rank r to r + 2^k (mod n), 0 bytes: the
  message pattern of SMPI's ``ompi_bruck`` barrier, which the simulations select;
* ``allreduce`` -- the message pattern of SMPI's ``rdb`` allreduce, which the
  simulations select: with p the largest power of two <= n and m = n - p, even
  ranks below 2m first send to the next rank; p participants then exchange the
  full vector in log2(p) recursive-doubling rounds; finally odd ranks below 2m
  send the result back.
  Rounds are treated as separated (no overlap between rounds), and a round's
  time ignores the per-message software costs SimGrid does not model either.

Cost: O(messages x route length) in C, a few milliseconds for the stencil at 12x12x12.

Errors: FtslideError for an unknown pattern.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import FtslideError
from ..sliding import core as sc
from ..sliding.topology import Topology
from .network import NetParams

__all__ = ["Congestion", "collective_rounds", "congestion", "pattern_congestion"]


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


def congestion(topology: Topology, rank_hosts: Sequence[int],
               rounds: Sequence[Sequence[tuple[int, int]]], nbytes: int,
               net: NetParams) -> Congestion:
    """Loads, hops and estimated time of message rounds between placed ranks
    (``rank_hosts[r]`` is the host of rank r)."""
    total_time = 0.0
    used = np.zeros(topology.links, dtype=bool)
    hops_max, hops_sum, messages, load_max, collisions = 0, 0, 0, 0, 0
    for msgs in rounds:
        routed = topology.route_round([rank_hosts[s] for s, _ in msgs],
                                      [rank_hosts[d] for _, d in msgs])
        hops = np.asarray(routed.hops, dtype=float)
        times = np.where(hops > 0, hops * net.lat + nbytes * np.asarray(routed.worst) / net.bw,
                         nbytes / net.loopback())  # loopback, as in the platform
        total_time += float(times.max()) if len(times) else 0.0
        load_max = max(load_max, routed.load_max)
        hops_max = max(hops_max, routed.hops_max)
        hops_sum += routed.hops_sum
        messages += len(msgs)
        collisions += routed.links_overloaded
        used |= np.frombuffer(routed.loads, dtype=np.uint32)[: topology.links] > 0
    return Congestion(messages, hops_max, hops_sum / messages if messages else 0.0, load_max,
                      collisions, int(used.sum()), total_time)


def pattern_congestion(layout: sc.Layout, rank_hosts: Sequence[int], pattern: str,
                       nbytes: int, net: NetParams, block: Sequence[int] | None = None) -> Congestion:
    """The model for one of the kernels (``stencil``, ``phased``, ``barrier``, ``allreduce``) with the
    ranks of ``layout`` on hosts ``rank_hosts`` of ``layout.net``; with a ``block`` every node runs
    that block of ranks and ``rank_hosts`` lists the rank grid's ranks (``Placement.hosts``)."""
    if pattern == "stencil":
        src, dst = sc.stencil_messages(layout, block=block)
        rounds = [list(zip(src, dst))]
    elif pattern == "phased":
        rounds = [list(zip(*sc.stencil_messages(layout, dim=d, block=block)))
                  for d in range(len(layout.logical))]
    else:
        rounds = collective_rounds(pattern, len(rank_hosts))
    return congestion(layout.net, rank_hosts, rounds, nbytes, net)
