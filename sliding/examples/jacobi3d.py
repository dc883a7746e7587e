"""jacobi3d.py: jacobi3d.c in Python, with numpy and mpi4py, through the binding sliding/python/sliding.py.

The same arguments and options (the runtime's, read by ``Sliding.from_args``, then N ITERATIONS
INTERVAL), the same arithmetic in the same order, the same
``jacobi3d: EVENT KEY=VALUE`` lines and exit statuses; see jacobi3d.c's header for what it
computes and prints. A rank's block is the numpy array u[i, j, k] (k varies fastest, as in C).
The sweep adds the six neighbours in C's order, element by element, and the sums run in C's
order too (``numpy.add.accumulate`` adds one element after the other, where ``numpy.sum`` would
add pairwise): the checksum is C's, bit for bit.

Run it with the project's Python (its mpi4py is built against the project's Open MPI), the binding
on PYTHONPATH and SLIDING_LIBRARY set (``eval "$(ftslide env)"``)::

    PYTHONPATH=sliding/python ftslide run -np 12 python3 sliding/examples/jacobi3d.py torus:3x2x2 x:1 hybrid
"""

from __future__ import annotations

import os
import struct
import sys

import numpy as np
from mpi4py import MPI

import sliding

USAGE = ("usage: jacobi3d [RUNTIME OPTIONS] GRID SPARES METHOD [N [ITERATIONS [INTERVAL]]]; runtime options "
         "(sliding.h): --block AxB[xC] --emulate-nodes K --node-coords FILE --checkpoint-every N "
         "--redundancy POLICY --domains AxB[xC] --checkpoint-dir DIR --file-every N")


def atoi(text: str) -> int:
    """C's atoi for the numbers of the command line: 0 for anything that is not one."""
    try:
        return int(text)
    except ValueError:
        return 0


class Field:
    """A rank's block with a halo layer, and what the iterations do to it."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.u = np.zeros((n + 2,) * 3)
        self.v = np.zeros((n + 2,) * 3)
        self.recv = np.zeros((n, n))

    def initial_values(self, cart: MPI.Cartcomm) -> None:
        n = self.n
        coords = [*cart.Get_coords(cart.Get_rank()), 0, 0][:3]
        g = [np.arange(1, n + 1, dtype=np.int64) + c * n for c in coords]
        gx, gy, gz = np.meshgrid(*g, indexing="ij")
        self.u[...] = 0
        self.u[1:-1, 1:-1, 1:-1] = ((gx * 7 + gy * 13 + gz * 29) % 101) / 101.0

    def face(self, dim: int, plane: int) -> np.ndarray:
        """The view of face ``plane`` of dimension ``dim``, without its halo edges."""
        inner = slice(1, self.n + 1)
        return self.u[(inner,) * dim + (plane,) + (inner,) * (2 - dim)]

    def exchange_halos(self, cart: MPI.Cartcomm) -> None:
        """The six faces, as jacobi3d.c; raises MPI.Exception on a failure."""
        self_rank, ndims = cart.Get_rank(), cart.Get_dim()
        periods = cart.Get_topo()[1]
        for dim in range(3):
            if dim < ndims:
                low, high = cart.Shift(dim, 1)
            else:
                low = high = self_rank if periods[0] else MPI.PROC_NULL
            # Send the high face up, receive the low halo from below; then the reverse.
            for direction in range(2):
                to, source = (high, low) if direction == 0 else (low, high)
                send = np.ascontiguousarray(self.face(dim, self.n if direction == 0 else 1))
                cart.Sendrecv([send, MPI.DOUBLE], to, dim * 2 + direction, [self.recv, MPI.DOUBLE], source,
                              dim * 2 + direction)
                if source == MPI.PROC_NULL:
                    self.recv[...] = 0
                self.face(dim, 0 if direction == 0 else self.n + 1)[...] = self.recv

    def sweep(self) -> None:
        u = self.u
        self.v[1:-1, 1:-1, 1:-1] = (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] +
                                    u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:]) / 6.0
        self.u, self.v = self.v, self.u

    def checksum(self, cart: MPI.Cartcomm) -> float | None:
        """Sum of the block, then of all blocks in rank order, at rank 0 (None elsewhere)."""
        mine = np.add.accumulate(self.u[1:-1, 1:-1, 1:-1].ravel())[-1:].copy()
        rank = cart.Get_rank()
        every = np.zeros(cart.Get_size()) if rank == 0 else None
        cart.Gather([mine, MPI.DOUBLE], [every, MPI.DOUBLE] if rank == 0 else None, root=0)
        return float(np.add.accumulate(every)[-1]) if rank == 0 else None


def fail(s: sliding.Sliding, step: str, error: sliding.SlidingError) -> None:
    """A runtime error: every survivor gets the same one, and all of them leave with exit status 3."""
    print(f"jacobi3d: error step={step} status={error.status.name} message={error.message}", file=sys.stderr,
          flush=True)
    s.free()
    sys.exit(3)  # mpi4py finalizes MPI at exit


def main(argv: list[str]) -> int:
    world_rank = MPI.COMM_WORLD.Get_rank()
    try:
        s, rest = sliding.Sliding.from_args(MPI.COMM_WORLD, argv)  # rest: N ITERATIONS INTERVAL
    except sliding.SlidingError as exc:  # bad arguments, or a layout the runtime refuses: one line, exit 2
        if world_rank == 0:
            step, message = ("arguments", USAGE) if exc.status == sliding.Status.ERR_ARG else ("create", exc.message)
            print(f"jacobi3d: error step={step} status={exc.status.name} message={message}", file=sys.stderr,
                  flush=True)
        return 2
    n = atoi(rest[0]) if len(rest) > 0 else 8
    iterations = atoi(rest[1]) if len(rest) > 1 else 40
    every = atoi(rest[2]) if len(rest) > 2 else 0  # none: the runtime's --checkpoint-every (checkpoint_due)
    if n < 1 or iterations < 1 or (len(rest) > 2 and every < 1):
        if world_rank == 0:
            print("jacobi3d: error step=arguments message=N, ITERATIONS and INTERVAL must be at least 1",
                  file=sys.stderr, flush=True)
        s.free()
        return 2
    f = Field(n)
    # u changes identity at every sweep (swap): register a stable array and copy into it around
    # checkpoints and recoveries.
    saved = np.zeros((n + 2,) * 3)
    s.register(saved)

    it = 0
    try:
        cart, role, version = s.start()
    except sliding.SlidingError as exc:
        fail(s, "start", exc)
    Role = sliding.Role
    if role != Role.FINISHED and version >= 0:  # a spare promoted after a checkpoint
        f.u[...] = saved
        it = version
    elif role != Role.FINISHED:
        f.initial_values(cart)
    if role == Role.PROMOTED:
        s.report_recovery("jacobi3d", it)
    report_times = os.environ.get("JACOBI3D_TIMES") == "1"
    iteration_point = sliding.Point.ITER.name.lower()
    total = None
    while role != Role.FINISHED:
        try:
            if it == iterations:
                # The gather is the run's last step: finish() agrees that every worker got through it,
                # or raises, and the run goes back to the checkpoint.
                total = f.checksum(cart)
                s.finish()
                break
            s.killpoint(f"{iteration_point}={it}")
            f.exchange_halos(cart)
            f.sweep()
            it += 1
            if report_times and cart.Get_rank() == 0:
                print(f"jacobi3d: iteration number={it} time={MPI.Wtime():.6f}", flush=True)
            if (it % every == 0 if every else s.checkpoint_due(it)) and it < iterations:
                saved[...] = f.u
                s.checkpoint(it)
            continue
        except MPI.Exception:
            pass
        try:
            cart, role, version = s.recover()
        except sliding.SlidingError as exc:
            fail(s, "recovery", exc)
        if role == Role.FINISHED:
            break
        if version >= 0:
            f.u[...] = saved
            it = version
        else:
            f.initial_values(cart)
            it = 0
        s.report_recovery("jacobi3d", it)

    if total is not None:
        bits = struct.unpack("<Q", struct.pack("<d", total))[0]
        print(f"jacobi3d: done iterations={iterations} n={n} checksum=0x{bits:016x} value={total:.17g}", flush=True)
    s.free()
    return 0


if __name__ == "__main__":
    try:
        code = main(sys.argv)
    except (RuntimeError, ValueError) as exc:  # no library, an array refused: one line
        if MPI.COMM_WORLD.Get_rank() == 0:
            print(f"jacobi3d: error step=arguments message={exc}", file=sys.stderr, flush=True)
        code = 2
    sys.exit(code)  # mpi4py finalizes MPI at exit
