"""The check-once style from Python (the binding sliding/python), as checkonce.c runs it in C, on
mesh:3x2 with spares x:1 (6 processes: nodes 0-3 run a 2x2 rank grid, nodes 4 and 5 wait), written
as the binding's docstring recommends: no per-call checks, one ``except MPI.Exception`` around the
loop, whose handler recovers.

Usage: checkonce.py MODE
  run              20 iterations of a halo exchange (Irecv/Isend/Waitall on cart), a checkpoint every
                   4, finish; the recovery callback notes old>new rank and runs an Allreduce on the
                   new cart
  callback-raises  the callback of logical rank 0 raises ValueError
  callback-returns the callback of logical rank 0 returns 1
Every process reports (ftcheck.py) what checkonce.c reports under the same keys: "dims" and "coords"
before start, "start", "recover" (the last recover), "finish", "callback" (old>new, each call), "sum"
(the final value summed at logical rank 0, as %.17g); and "ok_start" (ok() after start, 1 or 0),
"status" (the last status of start or recover), "cause" (the type of the SlidingError's __cause__, where
there is one), "null" (the status of dims after free).
Kill points: the runtime's and "iter=I" at the start of iteration I.
"""

import sys

import numpy as np
from ftcheck import report
from mpi4py import MPI

import sliding

ITERATIONS = 20
mode = sys.argv[1] if len(sys.argv) > 1 else "run"
calls: list[str] = []


def on_recovery(s: sliding.Sliding, old_rank: int, new_rank: int, cart: MPI.Cartcomm) -> int | None:
    calls.append(f"{old_rank}>{new_rank}")
    if new_rank != s.rank or cart.Get_rank() != new_rank:
        return 1
    if new_rank == 0 and mode == "callback-raises":
        raise ValueError("tile 0 refuses its new neighbours")
    if new_rank == 0 and mode == "callback-returns":
        return 1
    count = np.zeros(1, dtype=np.intc)
    cart.Allreduce(np.ones(1, dtype=np.intc), count, op=MPI.SUM)
    return None if count[0] == 4 else 1


def step(cart: MPI.Cartcomm, state: np.ndarray) -> None:
    """Every rank sends its value to its four neighbours (none beyond the edges) and adds what it
    receives, in checkonce.c's order."""
    received = np.zeros(4)
    requests = []
    for dim in range(2):
        low, high = cart.Shift(dim, 1)
        requests.append(cart.Irecv(received[dim * 2:dim * 2 + 1], low, dim))
        requests.append(cart.Irecv(received[dim * 2 + 1:dim * 2 + 2], high, dim))
        requests.append(cart.Isend(state, high, dim))
        requests.append(cart.Isend(state, low, dim))
    MPI.Request.Waitall(requests)
    state[0] = state[0] * 0.5 + (received[0] + received[1] + received[2] + received[3]) * 0.125


s = sliding.Sliding(MPI.COMM_WORLD, "mesh:3x2", "x:1", "hybrid")
report("dims", "x".join(map(str, (*s.dims, 1, 1)[:3])))
report("coords", ",".join(map(str, s.coords)))
state = np.zeros(1)
s.register(state)
s.on_recovery(on_recovery)
status = finish = recover = None
cart, role, version, it = MPI.COMM_NULL, sliding.Role.FINISHED, -1, 0


def resume() -> None:
    global it
    it = max(version, 0)
    if version < 0:
        state[0] = s.rank


def outcome(exc: sliding.SlidingError) -> str:
    if exc.__cause__ is not None:
        report("cause", type(exc.__cause__).__name__)
    return exc.status.name


try:
    cart, role, version = s.start()
    status = "OK"
except sliding.SlidingError as exc:
    status = outcome(exc)
report("start", status)
report("ok_start", int(s.ok()))
if status == "OK" and role != sliding.Role.FINISHED:
    resume()
while status == "OK" and role != sliding.Role.FINISHED:
    try:
        while it < ITERATIONS:
            s.killpoint(f"iter={it}")
            step(cart, state)
            it += 1
            if it % 4 == 0:
                s.checkpoint(it)
        s.finish()
        finish = "OK"
        break
    except MPI.Exception:
        finish = "ERR_FAILED"
        try:
            cart, role, version = s.recover()
            status = recover = "OK"
        except sliding.SlidingError as exc:
            status = recover = outcome(exc)
        report("recover", recover)
        if status == "OK" and role != sliding.Role.FINISHED:
            resume()
report("status", status)
if finish is not None:
    report("finish", finish)
if calls:
    report("callback", ",".join(calls))
if status == "OK" and role != sliding.Role.FINISHED:
    total = np.zeros(1)
    cart.Reduce(state, total, op=MPI.SUM, root=0)
    if s.rank == 0:
        report("sum", "%.17g" % total[0])
s.free()
try:
    s.dims
    report("null", "OK")
except sliding.SlidingError as exc:
    report("null", exc.status.name)
