"""The Python binding on np 2 (mesh:2x1, spares x:1: one worker, one spare): which numpy arrays
sliding.Sliding.register takes, and the one-line error of the others. Every process reports, as
ftcheck lines, the status and message of each refusal (and whether it is a ValueError), then a
start, checkpoint and finalize that carry the registered array."""

import numpy as np
from ftcheck import report
from mpi4py import MPI

import sliding

s = sliding.Sliding(MPI.COMM_WORLD, "mesh:2x1", "x:1", "simple")
base = np.zeros((10, 4))
read_only = np.zeros(8)
read_only.flags.writeable = False
for key, array in (("strided", base[::2]), ("fortran_order", np.asfortranarray(base)), ("read_only", read_only),
                   ("list", [1.0, 2.0])):
    try:
        s.register(array)
        report(key, "OK")
    except ValueError as exc:
        report(key, exc.status.name)
        report(f"{key}_value_error", int(isinstance(exc, sliding.SlidingError)))
        report(f"{key}_message", str(exc))
u = np.full((3, 4, 5), 7.0)
s.register(u)
report("whole", "OK")
cart, role, version = s.start()
report("role", role.name)
report("roles", ",".join(f"{r.name}={int(r)}" for r in sliding.Role))
if role != sliding.Role.FINISHED:
    report("rank", s.rank)
    s.checkpoint(1)
    report("checkpoint", "OK")
    s.finalize()
    report("finalize", "OK")
report("failed", len(s.failed()))
s.free()
