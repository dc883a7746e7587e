"""Agreement and failure introspection, from mpi4py: Comm.Agree, or Comm.Iagree + Request.Wait
with the argument "iagree". np 4; the test kills rank 3 at "after_first_agree".

1. No failure: the flag is the AND of all flags (6).
2. Rank 3 is dead and nobody acknowledged it: every survivor gets MPIX_ERR_PROC_FAILED, twice
   (with Iagree the flag buffer holds the AND of the survivors' flags, 5).
3. Comm.Get_failed holds rank 3; Comm.Ack_failed(0) acknowledges nothing, Comm.Ack_failed()
   everything: 1.
4. After that: success, and the AND (3).
"""

import sys
from array import array

from ftcheck import RANK, call, dup_world, report, world_ranks
from ftslide_killpoint import killpoint

comm = dup_world()
nonblocking = sys.argv[1:] == ["iagree"]


def agreement(key: str, flag: int) -> int | None:
    if not nonblocking:
        return call(key, comm.Agree, flag)
    buffer = array("i", [flag])
    request = call(f"{key}_start", comm.Iagree, buffer)
    if request is not None:
        call(key, request.Wait)
    return buffer[0]


report("first_flag", agreement("first_rc", 6 if RANK == 2 else 14 if RANK == 1 else 15))
killpoint(RANK, "after_first_agree")

flag = agreement("unacked_rc", 5 if RANK == 0 else 15)
if nonblocking:
    report("unacked_flag", flag)
agreement("unacked_again_rc", 15)
report("failed", world_ranks(comm.Get_failed()))
report("acked_none", call("ack_none_rc", comm.Ack_failed, 0))
report("acked", call("ack_failed", comm.Ack_failed))
report("acked_flag", agreement("acked_rc", 3 if RANK == 1 else 15))
report("finished", 1)
