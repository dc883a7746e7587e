"""survive: an iterative allreduce that keeps going when ranks die (Python, mpi4py).

The same program as survive.c. Every iteration each live rank contributes (world rank + 1). On an
error the survivors revoke the communicator, shrink it, agree on the iteration to resume from and
redo it without the dead; each iteration's sum is checked against the sum over the
communicator's members, and rank 0 prints one line per recovery and a summary:

    survive: recovered at iteration 5: 3 survivors, 412.3 us
    survive: done: 20 iterations, 1 recoveries, 3 survivors, checksum 1234, all sums correct

Usage: survive.py [ITERATIONS]. Needs mpi4py built against the project's Open MPI (ftslide
build-mpi4py). Fault injection: FTSLIDE_KILL (ompi-ulfm/python/ftslide_killpoint.py, on
PYTHONPATH), points "iter=N" at the start of iteration N.

Collectives go through the uppercase, buffer-based methods (comm.Allreduce), which call MPI on comm
itself. mpi4py's lowercase reduce, allreduce, scan and exscan send pickled objects point to point on
a private duplicate of comm, which comm.Revoke() does not reach: a survivor waiting there for a live
rank that has gone on to recover would wait forever.
"""

import sys
from array import array

from mpi4py import MPI

from ftslide_killpoint import killpoint


def allreduce(comm: MPI.Intracomm, value: int, op: MPI.Op) -> int:
    """MPI_Allreduce of one integer over comm."""
    result = array("q", [0])
    comm.Allreduce(array("q", [value]), result, op=op)
    return result[0]


def expected_sum(comm: MPI.Intracomm) -> int:
    """Sum of (world rank + 1) over the members of comm."""
    group = comm.Get_group()
    world = MPI.Group.Translate_ranks(group, list(range(group.Get_size())), MPI.COMM_WORLD.Get_group())
    return sum(rank + 1 for rank in world)


def recover(comm: MPI.Intracomm, failed_iteration: int) -> tuple[MPI.Intracomm, int]:
    """A shrunk copy of comm without the dead, and the iteration all survivors resume from (the
    earliest one any of them failed in). A failure during recovery starts it again."""
    while True:
        comm.Revoke()
        try:
            shrunk = comm.Shrink()
        except MPI.Exception:
            continue
        comm.Free()
        comm = shrunk
        try:
            return comm, allreduce(comm, failed_iteration, MPI.MIN)
        except MPI.Exception:
            continue


def main() -> int:
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    world_rank = MPI.COMM_WORLD.Get_rank()
    comm = MPI.COMM_WORLD.Dup()  # mpi4py returns errors as MPI.Exception

    # Per-iteration results: an iteration redone after a recovery overwrites its slot.
    sums, expected = [0] * iterations, [0] * iterations
    recoveries, it = 0, 0
    while it < iterations:
        killpoint(world_rank, f"iter={it}")
        try:
            sums[it] = allreduce(comm, world_rank + 1, MPI.SUM)
            expected[it] = expected_sum(comm)
            it += 1
            continue
        except MPI.Exception as exc:
            if exc.Get_error_class() not in (MPI.ERR_PROC_FAILED, MPI.ERR_REVOKED):
                print(f"survive: rank {world_rank}: unexpected error {exc}", flush=True)
                MPI.COMM_WORLD.Abort(2)
        start = MPI.Wtime()
        comm, it = recover(comm, it)
        recoveries += 1
        if comm.Get_rank() == 0:
            print(f"survive: recovered at iteration {it}: {comm.Get_size()} survivors, "
                  f"{(MPI.Wtime() - start) * 1e6:.1f} us", flush=True)

    checksum = sum(total * (i + 1) for i, total in enumerate(sums))
    wrong = allreduce(comm, sum(a != b for a, b in zip(sums, expected)), MPI.SUM)
    if comm.Get_rank() == 0:
        print(f"survive: done: {iterations} iterations, {recoveries} recoveries, {comm.Get_size()} survivors, "
              f"checksum {checksum}, {'WRONG SUMS' if wrong else 'all sums correct'}", flush=True)
    comm.Free()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
