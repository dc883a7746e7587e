"""Shrink after two failures, from mpi4py. np 5; the test kills ranks 1 and 3 at "after_barrier".

Comm.Shrink keeps 0,2,4 in order with new ranks 0,1,2 and an allreduce works on the result; so
does Comm.Ishrink (MPIX_Comm_ishrink of patch ompi/09), whose communicator is valid once the
request that comes with it completes (Request.Test in a loop here).
"""

from mpi4py import MPI

from ftcheck import RANK, barrier_before_kill, call, dup_world, report, world_ranks
from ftslide_killpoint import killpoint

comm = dup_world()
barrier_before_kill(comm)
killpoint(RANK, "after_barrier")


def describe(name: str, newcomm: MPI.Comm) -> None:
    report(f"{name}_size", newcomm.Get_size())
    report(f"{name}_order", world_ranks(newcomm.Get_group()))
    report(f"{name}_new_rank", newcomm.Get_rank())
    report(f"{name}_sum", call(f"{name}_allreduce", newcomm.allreduce, 1))


describe("shrunk", call("shrink", comm.Shrink))
started = call("ishrink", comm.Ishrink)
if started is not None:
    ishrunk, request = started
    report("ishrunk_null_at_start", int(ishrunk == MPI.COMM_NULL))
    while not call("ishrink_test", request.Test):
        pass
    describe("ishrunk", ishrunk)
report("finished", 1)
