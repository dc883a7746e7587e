"""ftslide notify: the job manager declares a process of a running job dead."""

from __future__ import annotations

import argparse

from ..notify import notify

NAME = "notify"
HELP = ("tell a running ULFM job that the job manager declared a rank dead (a PMIx tool connected to "
        "the job's mpirun): ULFM marks it failed at once, without waiting for a timeout")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rank", type=int, metavar="R", required=True, help="a rank of the job (MPI_COMM_WORLD)")
    parser.add_argument("--pid", type=int, help="pid of the job's mpirun/prterun (needed if several run)")
    parser.add_argument("--cluster", metavar="NAME", help="the job runs on this emulated cluster (ftslide cluster)")


def run(args: argparse.Namespace) -> int:
    job, nspace = notify(args.rank, pid=args.pid, cluster_name=args.cluster)
    print(f"job {job} ({nspace}): rank {args.rank} declared dead")
    return 0
