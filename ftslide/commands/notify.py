"""ftslide notify: the job manager declares a node or a process of a running job dead."""

from __future__ import annotations

import argparse

from ..jobmgr.notify import notify

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "notify"
HELP = ("tell a running ULFM job that the job manager declared a node or a rank dead (a PMIx tool "
        "connected to the job's mpirun): the survivors see MPIX_ERR_PROC_FAILED without any timeout")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--node", metavar="K|HOST",
                      help="a node: its number with --cluster, else its host name as mpirun knows it")
    what.add_argument("--rank", type=int, metavar="R", help="a rank of the job (MPI_COMM_WORLD)")
    parser.add_argument("--pid", type=int, help="pid of the job's mpirun/prterun (needed if several run)")
    parser.add_argument("--cluster", metavar="NAME", help="the job runs on this emulated cluster (ftslide cluster)")


def run(args: argparse.Namespace) -> int:
    job, what = notify(rank=args.rank, node=args.node, pid=args.pid, cluster_name=args.cluster)
    if args.node is not None:
        print(f"job {job}: node {args.node} ({what}) declared dead")
    else:
        print(f"job {job} ({what}): rank {args.rank} declared dead")
    return 0
