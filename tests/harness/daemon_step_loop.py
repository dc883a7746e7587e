"""Submit the daemon-step job of test_jobmgr_slurm.py (PRRTE under srun, ``hostname`` on 3 x 2)
again and again to one Slurm test cluster; on a hang, save what the stuck processes show.

Not part of the CI suite: it is the loop used to chase the intermittent hang of
``test_daemon_step_keeps_running_after_failures`` (docs/jobmgr.md). Usage (root, from the
repository, with FTSLIDE_MPI_PREFIX set)::

    .venv/bin/python tests/harness/daemon_step_loop.py --runs 30 --out /tmp/loop [--verbose]

For every hung run, ``<out>/hang-<n>/`` gets the job output so far and, for every PRRTE
process of the cluster (prterun, prted): its ``/proc`` status (signal masks per thread), its
children with their state (a ``Z`` child is an exit nobody reaped), and gdb's stacks. The
job is then cancelled. Exit status 0 when no run hung or ended other than COMPLETED.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's ftslide and harness

from ftslide.toolchain.mpi import processes_with  # noqa: E402
from ftslide.errors import FtslideError  # noqa: E402
from harness.slurmcluster import FINAL_STATES, SlurmCluster  # noqa: E402

NODES, CPUS = 3, 2
VERBOSE = ("--leave-session-attached", "--prtemca", "odls_base_verbose", "5")


def children(pid: int) -> list[tuple[int, str, str]]:
    """(pid, state letter, comm) of the direct children of ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            found.append((int(stat.parent.name), fields[0], comm))
    return found


def status_lines(path: Path) -> str:
    try:
        text = path.read_text()
    except OSError as exc:
        return f"{path}: {exc}\n"
    keep = ("Name", "State", "Pid", "PPid", "SigQ", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")
    return "".join(line + "\n" for line in text.splitlines() if line.split(":")[0] in keep)


def evidence(cluster: SlurmCluster, out: Path, output: Path) -> str:
    """Save what the stuck PRRTE processes show; return a one-line summary."""
    out.mkdir(parents=True, exist_ok=True)
    if output.exists():
        (out / "job.out").write_text(output.read_text(errors="replace"))
    summary = []
    for pid in sorted(processes_with(cluster.marker)):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if comm not in ("prted", "prterun", "mpirun"):
            continue
        report = [f"== {comm} {pid}\n", status_lines(Path(f"/proc/{pid}/status"))]
        for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
            report.append(f"-- thread {task.name}\n" + status_lines(task / "status"))
        kids = children(pid)
        report.append(f"-- children: {kids}\n")
        gdb = subprocess.run(["gdb", "-batch", "-p", str(pid), "-ex", "info threads",
                              "-ex", "thread apply all bt"], capture_output=True, text=True, timeout=120)
        report.append(gdb.stdout + gdb.stderr)
        (out / f"{comm}-{pid}.txt").write_text("".join(report))
        summary.append(f"{comm} {pid} children {[(k[0], k[1], k[2]) for k in kids]}")
    return "; ".join(summary)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=60, help="seconds before a run counts as hung")
    parser.add_argument("--out", type=Path, default=Path("/tmp/daemon-step-loop"))
    parser.add_argument("--verbose", action="store_true", help="daemons' output attached, odls verbose")
    parser.add_argument("--stop-on-hang", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    hangs = bad = 0
    cluster = SlurmCluster.start(nodes=NODES, cpus=CPUS)
    try:
        for n in range(1, args.runs + 1):
            script, output = args.out / "job.sh", args.out / f"job-{n}.out"
            output.unlink(missing_ok=True)
            extra = VERBOSE if args.verbose else ()
            made = subprocess.run([sys.executable, "-m", "ftslide", "jobscript", "slurm", "--nodes", str(NODES),
                                   "--ntasks-per-node", str(CPUS), "--time", "5", "--job-output", str(output),
                                   "-o", str(script), "--", *cluster.mpirun_options(), *extra,
                                   "--prtemca", "plm_base_verbose", "5", "hostname"],
                                  capture_output=True, text=True, cwd=ROOT)
            if made.returncode != 0:
                print(made.stderr, file=sys.stderr)
                return 2
            job = cluster.sbatch(script)
            start = time.monotonic()
            while True:
                fields = cluster.job(job)
                if fields.get("JobState") in FINAL_STATES:
                    break
                if time.monotonic() - start > args.timeout:
                    break
                time.sleep(0.3)
            state = fields.get("JobState")
            took = time.monotonic() - start
            if state in FINAL_STATES:
                if state != "COMPLETED":
                    bad += 1
                print(f"run {n}: {state} {took:.1f} s", flush=True)
                output.unlink(missing_ok=True)
                continue
            hangs += 1
            summary = evidence(cluster, args.out / f"hang-{n}", output)
            print(f"run {n}: HANG ({state} after {took:.0f} s): {summary}", flush=True)
            cluster.command(["scancel", str(job)], check=False)
            try:
                cluster.wait(job, timeout=60)
            except FtslideError as exc:
                print(f"run {n}: {exc}", flush=True)
            if args.stop_on_hang:
                break
    finally:
        cluster.stop()
    print(f"{n} runs: {hangs} hangs, {bad} not COMPLETED", flush=True)
    return 0 if hangs == bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
