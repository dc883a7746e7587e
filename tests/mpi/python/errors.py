"""Errors after a failure, from mpi4py. np 3; the test kills rank 2 at "after_barrier".

Rank 0: a receive from rank 2 raises MPIX_ERR_PROC_FAILED; a send to rank 1 works. An
MPI_ANY_SOURCE receive then raises MPIX_ERR_PROC_FAILED_PENDING and stays pending;
Comm.Get_failed holds rank 2, Comm.Ack_failed() acknowledges it (1), and after that rank 0
tells rank 1 to send: the same request completes with rank 1's message.
"""

from array import array

from mpi4py import MPI

from ftcheck import RANK, barrier_before_kill, call, dup_world, report, world_ranks
from ftslide_killpoint import killpoint

comm = dup_world()
barrier_before_kill(comm)
killpoint(RANK, "after_barrier")

value = array("i", [-1])
if RANK == 0:
    call("recv_from_dead", comm.Recv, [value, MPI.INT], 2, 0)
    call("send_to_live", comm.Send, [array("i", [99]), MPI.INT], 1, 1)
    request = comm.Irecv([value, MPI.INT], MPI.ANY_SOURCE, 2)
    status = MPI.Status()
    call("first_wait", request.Wait, status)
    report("still_pending", int(request != MPI.REQUEST_NULL))
    report("failed", world_ranks(comm.Get_failed()))
    report("acked", call("ack_failed", comm.Ack_failed))
    comm.Send([array("i", [1]), MPI.INT], 1, 3)
    call("second_wait", request.Wait, status)
    report("value", value[0])
    report("source", status.Get_source())
elif RANK == 1:
    call("recv_from_live", comm.Recv, [value, MPI.INT], 0, 1)
    report("value", value[0])
    comm.Recv([array("i", [0]), MPI.INT], 0, 3)
    comm.Send([array("i", [42]), MPI.INT], 0, 2)
report("finished", 1)
