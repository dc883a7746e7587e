"""The ULFM programs of tests/mpi/patterns, each with its kill plans and its verdict.

A pattern program is a ULFM program written the way users write them (ring with
revoke-and-leave, master/worker on MPI_ANY_SOURCE, buddy checkpoints, ...).
Each survivor judges its own run and prints ``ftcheck rank=R outcome=ok`` (or
``outcome=wrong`` with ``why=...``); this module adds what no single rank can
see: that every survivor answered, that the values all survivors must share are
equal, that the counts match the kills that landed, and, for the patterns that
say so, that every survivor came back from ``MPI_Finalize`` (``finalized=1``).

``plan(pattern, np, seed)`` draws the victims and their kill points from the
seed (the same seed always gives the same kills), only points the program
reaches whatever the timing; ``run_pattern`` runs one program once and returns
an ``Outcome``: ``ok``, ``wrong`` (a check failed, or a rank died at a kill
point the plan did not name), ``missed`` (every check passed but a planned
kill did not land: the run did not test the failure it was drawn for),
``hang`` (no end within the timeout; the stacks of the stuck processes are
kept) or ``error`` (mpirun failed). Two conditions of a run besides its kills:

* ``message_bytes``: the size of the messages whose data the program checks, for
  the patterns with a ``message`` way to take it (the revoke-using ones): read
  from ``FTCHECK_MESSAGE_BYTES`` (tests/mpi/ftcheck.h, which every rank reports
  back as ``message_bytes=N`` and the verdict compares), or given as a count of
  doubles in argv[1] (``ring-tutorial``); the other patterns have no size.
* ``load``: that many busy processes (``busy``: CPU spinners) run beside the
  program, started before mpirun and killed when it ends, whatever the end; the
  ``Outcome`` keeps their number and the 1-minute load average at the start.

Module sets: ``ours`` and ``upstream`` run on the project's build (MCA options
select the modules); ``release`` is upstream's newest release from the Python
registry (tests/harness/ompi_release.py), its own modules, on its own prefix:
the caller gives ``run_pattern`` that prefix and a program built with it.

Used by tests/test_ulfm_patterns.py (a few seeds per pattern) and
bench/ulfm_patterns/campaign.py (the full campaign, docs/testing.md).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ftslide.toolchain import mpi

from mpiharness import MPI_SOURCES, parse_run

__all__ = ["MODULE_SETS", "RELEASE", "PATTERNS", "MESSAGE_MAX", "SPINNER", "VERDICTS", "Outcome", "Pattern", "build",
           "busy", "load_average", "message_problem", "message_size", "module_options", "plan", "judge", "run_pattern"]

# mpirun options selecting each module set. Ours are the build's defaults; upstream's are its
# coll/ftagree agreement (coll/ftera excluded) and its binomial-graph revoke. The release set runs on
# another prefix, upstream's release with its own modules and no option (RELEASE).
MODULE_SETS: dict[str, tuple[str, ...]] = {
    "ours": (),
    "upstream": ("--mca", "coll", "^ftera", "--mca", "mpi_ft_reliable_bcast", "bmg"),
    "release": (),
}
RELEASE = "release"
# The largest --message-size, FTCHECK_MESSAGE_MAX of tests/mpi/ftcheck.h (which refuses larger ones).
MESSAGE_MAX = 64 << 20

Plan = Callable[[int, random.Random], dict[int, str]]


def one_victim(point: str, first: int, last: Callable[[int], int], victims: str = "any") -> Plan:
    """One kill: a victim (any rank, or not rank 0) at ``point`` % K, K drawn in first..last(np).
    Every K in that range must be a point the victim reaches in every run (judge: ``missed``)."""

    def draw(np: int, rng: random.Random) -> dict[int, str]:
        low = 1 if victims == "workers" else 0
        return {rng.randrange(low, np): point % rng.randint(first, last(np))}

    return draw


def victims_at_distinct(point: str, count: int, first: int, last: int) -> Plan:
    """``count`` kills: distinct victims, each at ``point`` % K with distinct K in first..last."""

    def draw(np: int, rng: random.Random) -> dict[int, str]:
        return {victim: point % k for victim, k in zip(rng.sample(range(np), count),
                                                        sorted(rng.sample(range(first, last + 1), count)))}

    return draw


def one_per_stage(point: str, stages: Callable[[int], int]) -> Plan:
    """``stages(np)`` kills, one distinct victim at each of ``point`` % 0, % 1, ..."""

    def draw(np: int, rng: random.Random) -> dict[int, str]:
        victims = rng.sample(range(np), stages(np))
        return {victim: point % stage for stage, victim in enumerate(victims)}

    return draw


def last_rank(point: str) -> Plan:
    """One kill, always the same: the last rank at ``point``."""

    def draw(np: int, rng: random.Random) -> dict[int, str]:
        return {np - 1: point}

    return draw


def simultaneous_rounds(point: str, counts: Callable[[int], tuple[int, int]], first: int, last: int) -> Plan:
    """Two rounds of kills at once: ``counts(np)`` distinct victims, all of a round at the same
    ``point`` % K (K1 in first..last-2, then K2 in K1+2..last), so that they die together."""

    def draw(np: int, rng: random.Random) -> dict[int, str]:
        one, two = counts(np)
        victims = rng.sample(range(np), one + two)
        k1 = rng.randint(first, last - 2)
        k2 = rng.randint(k1 + 2, last)
        return {victim: point % (k1 if i < one else k2) for i, victim in enumerate(victims)}

    return draw


def and_survivor_in_repair(before: Plan, points: Sequence[str]) -> Plan:
    """The kills of ``before`` and one more, inside the repair they cause: another rank at a point
    drawn from ``points``."""

    def draw(np: int, rng: random.Random) -> dict[int, str]:
        kills = before(np, rng)
        return {**kills, rng.choice([rank for rank in range(np) if rank not in kills]): rng.choice(points)}

    return draw


def and_new_process_in_repair(before: Plan, point: str) -> Plan:
    """The kills of ``before`` and the first process spawned by the repair they cause, at ``point``;
    it names itself np + its rank in its spawned job (tests/mpi/patterns/replace_respawn.c), a number
    no original process has."""

    def draw(np: int, rng: random.Random) -> dict[int, str]:
        return {**before(np, rng), np: point}

    return draw


@dataclass(frozen=True)
class Pattern:
    name: str
    source: str                  # below tests/mpi
    args: tuple[str, ...]
    plan: Plan
    same: tuple[str, ...] = ()   # keys every survivor that prints them must print alike
    what: str = ""
    # How the program takes a message size: "env" (FTCHECK_MESSAGE_BYTES, tests/mpi/ftcheck.h),
    # "count" (argv[1], a count of doubles, before ``args``) or "" (it has none); and its size without one.
    message: str = ""
    message_bytes: int = 0
    finalized: bool = False      # every survivor must print finalized=1, after MPI_Finalize returned
    not_in_release: str = ""     # what upstream's release lacks to run it ("": it runs there too)


PATTERNS: dict[str, Pattern] = {p.name: p for p in (
    Pattern("ring-tutorial", "patterns/ring_tutorial.c", (), last_rank("iter=3"), ("survivors",),
            "the ULFM tutorial's ring: revoke and leave, reduce over a split without the victim, finalize",
            message="count", message_bytes=8192, finalized=True),
    Pattern("ring", "patterns/ring_revoke.c", ("10", "shrink"), one_victim("iter=%d", 1, lambda np: 8),
            ("survivors", "sum"), "ring of MPI_Sendrecv, revoke-and-leave, shrink", message="env",
            message_bytes=8192),
    Pattern("ring-ishrink", "patterns/ring_revoke.c", ("10", "ishrink"), one_victim("iter=%d", 1, lambda np: 8),
            ("survivors", "sum"), "the ring, recovered with MPIX_Comm_ishrink", message="env", message_bytes=8192,
            not_in_release="MPIX_Comm_ishrink (ours: patch ompi/09)"),
    # Only a worker's first task is certain: the master hands each later one to whichever worker
    # answered first, so a worker the scheduler holds back may never get a second (a missed kill).
    Pattern("master-worker", "patterns/master_worker.c", ("60",),
            one_victim("task=%d", 1, lambda np: 1, victims="workers"), (),
            "master/worker on MPI_ANY_SOURCE, MPIX_ERR_PROC_FAILED_PENDING, failure_ack"),
    Pattern("errhandler", "patterns/errhandler_ack.c", (), one_victim("iter=%d", 1, lambda np: 15),
            ("survivors",), "an error handler that acknowledges and carries on"),
    Pattern("insulation", "patterns/insulation.c", ("24",), one_victim("iter=%d", 0, lambda np: 22),
            ("survivors",), "a failure stays on the communicators that hold the dead process", message="env",
            message_bytes=4),
    Pattern("respawn", "patterns/respawn.c", (), one_victim("iter=%d", 1, lambda np: 15),
            ("survivors",), "shrink, MPI_Comm_spawn a replacement, merge, re-order ranks"),
    Pattern("respawn-twice", "patterns/respawn.c", (), victims_at_distinct("iter=%d", 2, 1, 15),
            ("survivors",), "the same, a second death after the first replacement joined"),
    Pattern("buddy-checkpoint", "patterns/buddy_checkpoint.c", (), one_victim("iter=%d", 1, lambda np: 18),
            ("survivors", "checksum"), "in-memory buddy checkpoint, rollback and recovery", message="env",
            message_bytes=2048),
    Pattern("transactions", "patterns/transactions_agree.c", (), one_victim("iter=%d", 0, lambda np: 18),
            ("survivors", "committed", "checksum"), "transactions closed by MPIX_Comm_agree", message="env",
            message_bytes=8),
    Pattern("five-failures", "patterns/five_failures_intercomm.c", (),
            one_per_stage("stage=%d", lambda np: min(5, np - 2)), ("survivors",),
            "failures in a row, each followed by shrink; then Intercomm_create + merge", message="env",
            message_bytes=8),
    Pattern("finalize", "patterns/finalize_after_failure.c", ("20",), one_victim("iter=%d", 1, lambda np: 18),
            (), "revoke and MPI_Finalize with the dead process and pending requests", finalized=True),
    Pattern("iagree", "patterns/iagree_get_failed.c", ("30",), one_victim("round=%d", 0, lambda np: 28),
            ("digest", "acked"), "MPIX_Comm_iagree with MPIX_Comm_get_failed / ack_failed"),
    # issue 36: the patterns below.
    Pattern("intercomm-agree", "patterns/intercomm_agree.c", ("10",), one_victim("round=%d", 1, lambda np: 8),
            ("survivors", "sum"), "two halves joined by MPI_Intercomm_create: agree (the remote group's AND), "
            "shrink, a message and MPIX_Comm_iagree on the intercommunicator"),
    # MPIX_Comm_replace as the tutorials write it; the replacement is retried when a survivor or a
    # new process dies inside it.
    Pattern("replace-respawn", "patterns/replace_respawn.c", (), one_victim("iter=%d", 1, lambda np: 9),
            ("survivors", "attempts"), "MPIX_Comm_replace: shrink, spawn, merge, agree, split by the dead's ranks"),
    Pattern("replace-survivor-dies", "patterns/replace_respawn.c", (),
            and_survivor_in_repair(one_victim("iter=%d", 1, lambda np: 9), ("replace=1.spawn", "replace=1.join")),
            ("survivors", "attempts"), "the same, a survivor dies inside the replacement, which is retried"),
    Pattern("replace-spawnee-dies", "patterns/replace_respawn.c", (),
            and_new_process_in_repair(one_victim("iter=%d", 1, lambda np: 9), "spawnee=1.1"),
            ("survivors", "attempts"), "the same, a new process dies inside the replacement, which is retried"),
    Pattern("thread-recv-revoke", "patterns/thread_recv_revoke.c", ("10",), one_victim("iter=%d", 1, lambda np: 8),
            ("survivors", "sum"), "MPI_THREAD_MULTIPLE: a receive blocked on a live peer is released by "
            "another thread's revoke (MPIX_ERR_REVOKED); join, shrink, both threads again"),
    Pattern("nbc-inflight", "patterns/nbc_inflight.c", ("10",), one_victim("posted=%d", 1, lambda np: 8),
            ("survivors", "sum"), "Iallreduce, Ibcast and Ibarrier in flight when a process dies: Waitall "
            "errors, revoke, shrink, the collectives again", message="env", message_bytes=8192),
    Pattern("simultaneous-twice", "patterns/simultaneous_twice.c", ("12",),
            simultaneous_rounds("iter=%d", lambda np: (2, 2) if np >= 6 else (2, 1) if np >= 4 else (1, 1), 1, 9),
            ("survivors", "sum"), "two processes die at the same moment, twice; revoke, shrink, a global sum"),
)}


def plan(pattern: Pattern, np: int, seed: int) -> dict[int, str]:
    """The kills of run ``seed`` of ``pattern`` at ``np``: {world rank: kill point}."""
    return pattern.plan(np, random.Random(f"{pattern.name}:{np}:{seed}"))


def build(prefix: Path, pattern: Pattern, out_dir: Path | None = None) -> Path:
    """The pattern's program, compiled with ``prefix``'s mpicc (the project's build or the release;
    tests/mpi and ompi-ulfm/include on the include path), reused while unchanged."""
    return mpi.compile_program(prefix, [MPI_SOURCES / pattern.source], flags=("-O2", "-Wall", "-Werror"),
                               out_dir=out_dir, include_dirs=[MPI_SOURCES])


def module_options(modules: str, cluster: bool) -> list[str]:
    """mpirun options of a module set; on the emulated cluster coll/han stays excluded too
    (jobmgr.cluster.mpirun_options), so an exclusion of ftera joins it in one ``--mca coll``."""
    options = list(MODULE_SETS[modules])
    if cluster:
        options = [*options[:1], "^han,ftera", *options[2:]] if options[:2] == ["--mca", "coll"] else options
    return options


def message_problem(message_bytes: int) -> str | None:
    """Why ``message_bytes`` cannot be a message size (None if it can): every program sends whole
    8-byte words, from 8 bytes to MESSAGE_MAX."""
    if message_bytes < 8 or message_bytes % 8 or message_bytes > MESSAGE_MAX:
        return f"a message size is a multiple of 8 from 8 to {MESSAGE_MAX}, not {message_bytes}"
    return None


def message_size(pattern: Pattern, message_bytes: int | None) -> int | None:
    """The size a run of ``pattern`` sends with ``message_bytes`` asked for (None: its own size):
    that size, or the pattern's own; None for a pattern without a size."""
    if not pattern.message:
        return None
    return message_bytes if message_bytes is not None else pattern.message_bytes


# busy(count): CPU spinners beside a block (ftslide/toolchain/mpi.py, the campaign driver's), which
# end by themselves when their parent goes, so a campaign killed with SIGKILL leaves none for long.
from ftslide.toolchain.mpi import SPINNER, busy  # noqa: E402  (re-exported for the pattern tests)


def load_average() -> float | None:
    """The 1-minute load average (/proc/loadavg), None where it cannot be read."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# The verdicts of a run, in the order the campaign's tables count them (judge, run_pattern).
VERDICTS = ("ok", "wrong", "missed", "hang", "error")


@dataclass
class Outcome:
    pattern: str
    np: int
    seed: int
    modules: str
    where: str                        # "node" or the cluster's name
    kills: dict[int, str]             # planned
    landed: dict[int, str] = field(default_factory=dict)  # every "killed at" line, planned or not
    verdict: str = "ok"               # ok | wrong | missed | hang | error (VERDICTS)
    detail: str = ""
    seconds: float = 0.0
    stacks: str = ""
    output: str = ""                  # stdout and stderr tail, for a verdict other than ok
    message_bytes: int | None = None  # the size its messages had; None: a pattern without a size
    load: int = 0                     # busy processes beside it
    loadavg: float | None = None      # 1-minute load average when it started

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


def unplanned_kills(planned: Mapping[int, str], landed: Mapping[int, str]) -> str:
    """The kills of ``landed`` that ``planned`` does not name, said in words ("" if none)."""
    return ", ".join(f"rank {rank} killed at {point}" + (f", planned at {planned[rank]}" if rank in planned else
                                                         ", which no plan named")
                     for rank, point in sorted(landed.items()) if planned.get(rank) != point)


def missed_kills(planned: Mapping[int, str], landed: Mapping[int, str]) -> str:
    """The kills of ``planned`` that did not land, said in words ("" if none)."""
    return ", ".join(f"rank {rank} at {point}" for rank, point in sorted(planned.items()) if rank not in landed)


# What Open MPI prints when a process's MPI_Init fails under MPI_ERRORS_ARE_FATAL. A replacement
# spawned while one of its parents dies cannot connect, aborts with MPI_ERR_UNKNOWN and so ends its
# own job only; mpirun returns that code (patch prrte/21, as without --with-ft and as 5.0.11 does).
INIT_ABORT = "An error occurred in MPI_Init"
INIT_ABORT_CODE = 14


def new_process_aborted(returncode: int, stderr: str) -> bool:
    """mpirun's exit status is a process's abort in MPI_Init, see INIT_ABORT."""
    return returncode == INIT_ABORT_CODE and INIT_ABORT in stderr


def judge(pattern: Pattern, np: int, returncode: int, reports: Mapping[int, Mapping[str, str]],
          landed: Mapping[int, str], message_bytes: int | None = None, *,
          planned: Mapping[int, str], init_aborted: bool = False) -> tuple[str, str]:
    """(verdict, detail) of a finished run that was to kill ``planned`` ({rank: point}, plan) and
    killed ``landed`` (every kill line of the run); ``message_bytes``: the size the run was to send
    (for a pattern that reads FTCHECK_MESSAGE_BYTES, every survivor must report it).

    ``error``: mpirun's exit status is not 0, unless ``init_aborted`` says a process aborted in
    MPI_Init (new_process_aborted): then the survivors' checks decide. ``wrong``: a rank died at a
    point the plan did not name (another rank or another point), or a check failed (a survivor's own verdict, the values they
    must share, the survivor count, the message size, ``finalized=1``). ``missed``: every check
    passed but a planned kill did not land, so the run tested less than it was drawn for; a planned
    victim that did not die is judged as a survivor, and a wrong run names its missed kills too."""
    if returncode != 0 and not init_aborted:
        return "error", f"mpirun exited with {returncode}"
    missed = missed_kills(planned, landed)
    also = f" (planned kills that did not land: {missed})" if missed else ""
    unplanned = unplanned_kills(planned, landed)
    if unplanned:
        return "wrong", unplanned + also
    verdict, detail = checks(pattern, np, reports, landed, message_bytes)
    if verdict != "ok":
        return verdict, detail + also
    if missed:
        return "missed", f"planned kills that did not land: {missed}"
    return "ok", ""


def checks(pattern: Pattern, np: int, reports: Mapping[int, Mapping[str, str]], landed: Mapping[int, str],
           message_bytes: int | None) -> tuple[str, str]:
    """("ok", "") or ("wrong", why): the survivors' reports of a run in which ``landed`` died."""
    survivors = [rank for rank in range(np) if rank not in landed]
    for rank in survivors:
        got = reports.get(rank, {})
        if got.get("outcome") != "ok":
            why = got.get("why") or ("no outcome line" if "outcome" not in got else got["outcome"])
            return "wrong", f"rank {rank}: {why}"
    if pattern.message == "env" and message_bytes is not None:
        sizes = {rank: reports[rank].get("message_bytes") for rank in survivors}
        if set(sizes.values()) != {str(message_bytes)}:
            return "wrong", f"message sizes {sizes}, not {message_bytes} bytes"
    for key in pattern.same:
        values = {rank: reports[rank][key] for rank in survivors if key in reports.get(rank, {})}
        if len(set(values.values())) > 1:
            return "wrong", f"survivors disagree on {key}: {values}"
    counts = {reports[rank]["survivors"] for rank in survivors if "survivors" in reports.get(rank, {})}
    if counts and counts != {str(len(survivors))}:
        return "wrong", f"survivors={sorted(counts)} with {len(survivors)} processes alive"
    if pattern.finalized:
        unfinished = [rank for rank in survivors if reports.get(rank, {}).get("finalized") != "1"]
        if unfinished:
            return "wrong", f"MPI_Finalize did not return at ranks {unfinished}"
    if pattern.name == "insulation":
        clean = {0, 1} - {rank % 2 for rank in landed}
        noisy = [rank for rank in survivors if rank % 2 in clean and reports[rank].get("half_errors") != "0"]
        if noisy:
            return "wrong", f"ranks {noisy} saw errors on a half communicator without a dead member"
    return "ok", ""


def run_pattern(prefix: Path, binary: Path, pattern: Pattern, np: int, seed: int, modules: str = "ours",
                timeout: float = 60, cluster: object | None = None,
                wrap: Callable[[list[str]], list[str]] | None = None,
                env: Mapping[str, str] | None = None, extra: Sequence[str] = (),
                message_bytes: int | None = None, load: int = 0) -> Outcome:
    """Run ``pattern`` once with the kills of ``seed``; ``wrap``/``env`` run it across an emulated
    cluster (jobmgr.cluster.job_argv / launch_environment), whose name ``cluster`` gives.
    ``message_bytes``: its message size (None: the program's own; message_problem says which are
    valid); ``load``: busy processes beside it (``busy``). ``prefix`` and ``binary`` go with
    ``modules``: the release set needs the release's prefix and a program built with it."""
    kills = plan(pattern, np, seed)
    size = message_size(pattern, message_bytes)
    outcome = Outcome(pattern.name, np, seed, modules, getattr(cluster, "name", "node") if cluster else "node", kills,
                      message_bytes=size, load=load)
    run_env = {**(env or {}), "FTSLIDE_KILL": ",".join(f"{rank}@{point}" for rank, point in kills.items())}
    program_args: tuple[str, ...] = pattern.args
    if pattern.message == "env" and message_bytes is not None:
        run_env["FTCHECK_MESSAGE_BYTES"] = str(message_bytes)
    elif pattern.message == "count" and size is not None:
        program_args = (str(size // 8), *pattern.args)
    args = [*module_options(modules, cluster is not None), *extra, "-np", str(np), str(binary), *program_args]
    with busy(load):
        outcome.loadavg = load_average()
        started = time.monotonic()
        try:
            result = mpi.run(prefix, args, timeout=timeout, env=run_env, stacks_on_timeout=True, wrap=wrap)
        except mpi.MpirunTimeout as exc:
            outcome.seconds = round(time.monotonic() - started, 3)
            hung = parse_run(-9, exc.stdout, exc.stderr)
            outcome.landed = dict(hung.killed)
            silent = [rank for rank in range(np) if rank not in outcome.landed
                      and "outcome" not in hung.reports.get(rank, {})]
            outcome.verdict, outcome.detail = "hang", f"no end within {timeout:g} s; no outcome from ranks {silent}"
            missed = missed_kills(kills, outcome.landed)
            outcome.detail += f"; planned kills that had not landed: {missed}" if missed else ""
            outcome.stacks, outcome.output = exc.stacks, (exc.stdout + exc.stderr)[-6000:]
            return outcome
        outcome.seconds = round(time.monotonic() - started, 3)
    run = parse_run(result.returncode, result.stdout, result.stderr)
    outcome.landed = dict(run.killed)  # all of them: judge compares them with the plan
    outcome.verdict, outcome.detail = judge(pattern, np, result.returncode, run.reports, outcome.landed, size,
                                            planned=kills,
                                            init_aborted=new_process_aborted(result.returncode, result.stderr))
    if not outcome.ok:
        outcome.output = (result.stdout + result.stderr)[-6000:]
    return outcome
