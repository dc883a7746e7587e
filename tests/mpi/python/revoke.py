"""Revoke after a failure, from mpi4py. np 4; the test kills rank 3 at "after_barrier".

Ranks 1 and 2 wait on a receive from rank 0, which calls Comm.Revoke instead of sending: the
pending receives, a later barrier and a later send raise MPIX_ERR_REVOKED at every survivor;
Comm.Is_revoked says so; Comm.Shrink of the revoked communicator keeps 0,1,2 and works.
"""

from array import array

from mpi4py import MPI

from ftcheck import RANK, barrier_before_kill, call, dup_world, report, world_ranks
from ftslide_killpoint import killpoint

comm = dup_world()
barrier_before_kill(comm)
killpoint(RANK, "after_barrier")

if RANK == 0:
    call("revoke", comm.Revoke)
else:
    request = comm.Irecv([array("i", [0]), MPI.INT], 0, 7)
    call("pending_recv", request.Wait)
call("later_barrier", comm.Barrier)
call("later_send", comm.Send, [array("i", [RANK]), MPI.INT], (RANK + 1) % 3, 8)
report("is_revoked", int(comm.Is_revoked()))
shrunk = call("shrink", comm.Shrink)
report("shrunk_size", shrunk.Get_size())
report("shrunk_order", world_ranks(shrunk.Get_group()))
report("shrunk_sum", call("shrunk_allreduce", shrunk.allreduce, 1))
report("finished", 1)
