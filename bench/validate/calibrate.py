#!/usr/bin/env python3
"""Calibration of the real runs: does the link rate set the time, or the CPU of many ranks on 2 cores?

    python bench/validate/calibrate.py [--rate 1mbit] [--halos 16384,65536,262144] [--repeats 5]

On one emulated torus:3x3x3 (links shaped to --rate, removed at the end):
1. TCP alone: one transfer of 64 KiB between two neighbouring nodes, one direction and both at once,
   against the link time (64 KiB / (rate x 1448/1514), the TCP payload of a 1514-byte frame).
2. The failure-free stencil7 kernel (18 ranks, spares x:1, as ftslide validate runs it) for each halo
   size, --repeats times: measured time per iteration, SimGrid's, their ratio, and the excess
   (measured - SimGrid) per iteration. Communication dominates when the ratio approaches 1 as the halo
   grows and the excess stays a small, roughly constant overhead.
Printed with the load average; not a timed test. Needs root.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ftslide.toolchain.mpi import compile_program  # noqa: E402
from ftslide.toolchain.ompi import require_prefix  # noqa: E402
from ftslide.jobmgr import cluster as netcluster  # noqa: E402
from ftslide import validate  # noqa: E402
from ftslide.simulation import smpi  # noqa: E402
from ftslide.sliding import core as sc  # noqa: E402
from ftslide.simulation.platform import hostfile, platform_xml  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402

SERVER = r'''
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], 5001)); s.listen(1)
s.settimeout(60); print("ok", flush=True)
c, _ = s.accept(); c.settimeout(60); n, got = int(sys.argv[2]), 0
while got < n:
    b = c.recv(1 << 20)
    if not b: break
    got += len(b)
c.sendall(b"x")
'''
CLIENT = r'''
import socket, sys, time
c = socket.create_connection((sys.argv[1], 5001), timeout=60)
c.sendall(b"w" * 1000); time.sleep(0.3)
t0 = time.monotonic(); c.sendall(b"d" * int(sys.argv[2])); c.recv(1); print(f"{time.monotonic() - t0:.4f}")
'''


def transfers(cluster: netcluster.Cluster, size: int, both: bool) -> list[float]:
    pairs = [(0, 1)] + ([(1, 0)] if both else [])
    procs = []
    try:
        for a, b in pairs:
            srv = subprocess.Popen(["ip", "netns", "exec", cluster.namespace(b), sys.executable, "-c", SERVER,
                                    str(netcluster.address(b)), str(size + 1000)], stdout=subprocess.PIPE, text=True)
            procs.append(srv)
            assert srv.stdout is not None and srv.stdout.readline().strip() == "ok"
        clients = [subprocess.Popen(["ip", "netns", "exec", cluster.namespace(a), sys.executable, "-c", CLIENT,
                                     str(netcluster.address(b)), str(size)], stdout=subprocess.PIPE, text=True)
                   for a, b in pairs]
        procs += clients
        return [float(c.communicate(timeout=60)[0]) for c in clients]
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", default="1mbit")
    ap.add_argument("--halos", default="16384,65536,262144")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    halos = [int(h) for h in args.halos.split(",")]
    name = f"cb{uuid.uuid4().hex[:6]}"
    cfg = validate.ValidateConfig(topology="torus:3x3x3", spares="x:1", methods=(sc.Method.SIMPLE.label,), failures=0,
                                  rate=args.rate, name=name)
    p = validate.plan(cfg)
    prefix = require_prefix()
    binary = compile_program(prefix, [smpi.KERNEL_SOURCE], flags=validate.COMPILE_FLAGS)
    hosts = p.placement.initial_hosts()
    dims = "x".join(map(str, p.placement.stencil_dims()))
    predicted = {}
    for halo in halos:
        run = smpi.KernelRun(platform_xml(p.topology, p.net), hostfile(hosts), p.placement.stencil_dims(),
                             p.placement.stencil_periodic, (f"stencil:{halo}",), 3, p.net)
        predicted[halo] = smpi.run_kernels(run)["stencil"]
    load0 = os.getloadavg()[0]
    cluster = netcluster.up(name, None, str(p.topology), args.rate, 1, None, p.topology.order)
    try:
        link = 65536 / p.net.bw
        one = [transfers(cluster, 65536, False)[0] for _ in range(args.repeats)]
        both = [t for _ in range(args.repeats) for t in transfers(cluster, 65536, True)]
        print(f"torus:3x3x3, links {args.rate}; load {load0:.1f}")
        print(f"TCP 64 KiB over one link: one way median {statistics.median(one):.4f} s "
              f"({min(one):.4f}-{max(one):.4f}), both ways at once {statistics.median(both):.4f} s "
              f"({min(both):.4f}-{max(both):.4f}); link time {link:.4f} s; ratio "
              f"{statistics.median(one) / link:.3f} / {statistics.median(both) / link:.3f}")
        rows = []
        for halo in halos:
            times = []
            for _ in range(args.repeats):
                out = validate.launch(cluster, prefix, hosts, [str(binary), dims, "1", "3", f"stencil:{halo}"],
                                      halo, 300)
                times.append(float(out.split("time=")[1].split()[0]))
            med = statistics.median(times)
            rows.append([halo, f"{med:.4f}", f"{min(times):.4f}-{max(times):.4f}", f"{predicted[halo]:.4f}",
                         f"{med / predicted[halo]:.3f}", f"{med - predicted[halo]:+.4f}"])
        print(f"failure-free stencil7, 18 ranks, 3 iterations per run, {args.repeats} runs per size "
              f"(load now {os.getloadavg()[0]:.1f}):")
        print_table(["halo B", "measured s", "min-max", "SimGrid s", "ratio", "excess s"], rows)
    finally:
        netcluster.teardown(cluster)
    return 0


if __name__ == "__main__":
    sys.exit(main())
