"""Reporting for the Python conformance programs, as tests/mpi/ftcheck.h does for C: each
observation is one line ``ftcheck rank=R KEY=VALUE`` on stdout, collected per rank by the pytest
harness. Errors are reported by class name, with the C names (MPIX_ERR_...)."""

from __future__ import annotations

from typing import Any, Callable

from mpi4py import MPI

__all__ = ["RANK", "report", "class_name", "call", "dup_world", "world_ranks"]

RANK = MPI.COMM_WORLD.Get_rank()
_NAMES = {MPI.SUCCESS: "MPI_SUCCESS", MPI.ERR_PROC_FAILED: "MPIX_ERR_PROC_FAILED",
          MPI.ERR_PROC_FAILED_PENDING: "MPIX_ERR_PROC_FAILED_PENDING", MPI.ERR_REVOKED: "MPIX_ERR_REVOKED",
          MPI.ERR_PENDING: "MPI_ERR_PENDING", MPI.ERR_IN_STATUS: "MPI_ERR_IN_STATUS"}


def report(key: str, value: object) -> None:
    print(f"ftcheck rank={RANK} {key}={value}", flush=True)


def class_name(error_class: int) -> str:
    return _NAMES.get(error_class, "OTHER_ERROR")


def call(key: str, function: Callable[..., Any], *args: Any) -> Any:
    """Call ``function``, report MPI_SUCCESS or the class of the MPI.Exception it raised under
    ``key``; return its result (None after an error)."""
    try:
        result = function(*args)
    except MPI.Exception as exc:
        report(key, class_name(exc.Get_error_class()))
        return None
    report(key, "MPI_SUCCESS")
    return result


def dup_world() -> MPI.Intracomm:
    """A dup of MPI_COMM_WORLD; mpi4py turns its errors into MPI.Exception (MPI_ERRORS_RETURN)."""
    comm = MPI.COMM_WORLD.Dup()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    return comm


def barrier_before_kill(comm: MPI.Intracomm) -> None:
    """The barrier before a kill point or a revoke, its error ignored as the C programs ignore it:
    a process still finishing its last round when a faster one revokes ``comm`` or the victim
    dies gets MPIX_ERR_REVOKED or MPIX_ERR_PROC_FAILED, and must go on to its checks."""
    try:
        comm.Barrier()
    except MPI.Exception:
        pass


def world_ranks(group: MPI.Group) -> str:
    """The world ranks of ``group``'s members, comma-separated, "none" when it is empty."""
    if group.Get_size() == 0:
        return "none"
    ranks = MPI.Group.Translate_ranks(group, list(range(group.Get_size())), MPI.COMM_WORLD.Get_group())
    return ",".join(map(str, ranks))
