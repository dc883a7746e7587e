"""Compiling and launching MPI programs with an Open MPI prefix (the project's build, or the one named
by ``--mpi`` / ``FTSLIDE_MPI``: ompi.require_prefix decides).

Errors and cost: FtslideError (one line) for a missing program, a bad mpirun option or a failed
compile; ``run`` raises MpirunTimeout (with the stacks if asked) when a launch outlives its
timeout and kills the launch's whole session either way; with a ResultWatch (on by default for an
MPI whose MPI_Finalize hangs after failures) it ends a job whose processes outlive its result line
and says so in one line. ``compile_program`` costs one ``mpicc``
per change of its inputs (a hash otherwise); the process helpers read ``/proc`` (O(processes)).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..errors import FtslideError
from .native import REPO
from .ompi import MARKER, cache_root, mpi_environment

__all__ = ["FORTRAN_SUFFIXES", "FORTRAN_KILLPOINT", "PYTHON_KILLPOINT_DIR", "MULTINODE_ULFM_OPTIONS",
           "launch_environment", "mpirun_argv", "compile_program", "split_program", "check_program",
           "MpirunTimeout", "process_stacks", "RESULT_LINE", "FINALIZE_GRACE", "ResultWatch", "MpiResult",
           "default_watch", "run", "launch_scratch", "ensure_stdin", "kill_processes",
           "processes_with", "run_marker", "SPINNER", "busy"]

# Headers every MPI program of the project may include (ftslide_killpoint.h, ...).
INCLUDE_DIRS = (REPO / "ompi-ulfm" / "include",)
# Fortran programs are compiled with the build's mpifort, the kill-point module first.
FORTRAN_SUFFIXES = (".f90", ".F90", ".f08", ".F08", ".f", ".F")
FORTRAN_KILLPOINT = REPO / "ompi-ulfm" / "fortran" / "ftslide_killpoint.f90"
# The kill-point module of Python programs (ftslide_killpoint.py), for their PYTHONPATH.
PYTHON_KILLPOINT_DIR = REPO / "ompi-ulfm" / "python"


# Open MPI 5.0.7's ULFM across nodes, measured on the emulated cluster and under Slurm: coll/han's
# sub-communicators are not revoked, so a survivor stays blocked in a node-local reduce (fixed
# upstream in 5.0.10; docs/nodeloss.md).
MULTINODE_ULFM_OPTIONS = ("--mca", "coll", "^han")


def launch_environment(prefix: Path) -> dict[str, str]:
    """The environment ``mpirun`` needs on one machine.

    Oversubscription is allowed (a 2-core machine runs np 8), and running as root
    is allowed when that is the case (containers and CI run as root).
    """
    env = mpi_environment(prefix)
    env.setdefault("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe")
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def mpirun_argv(prefix: Path, args: Sequence[str]) -> list[str]:
    """``mpirun --with-ft ulfm ARGS`` from the build."""
    return [str(prefix / "bin" / "mpirun"), "--with-ft", "ulfm", *args]


def compile_program(prefix: Path, sources: Sequence[Path], name: str | None = None,
                    flags: Sequence[str] = ("-O2",), out_dir: Path | None = None,
                    include_dirs: Sequence[Path] = (), link: Sequence[str] = (),
                    output: Path | None = None) -> Path:
    """Compile C ``sources`` with the build's ``mpicc``, or Fortran ones (FORTRAN_SUFFIXES) with its
    ``mpifort`` after the kill-point module FORTRAN_KILLPOINT (modules first, in the order given);
    reuse the result while nothing changed.

    Headers are searched in ``include_dirs`` and INCLUDE_DIRS; ``link`` goes after
    the sources (libraries). The result is ``output`` if given (rebuilt when its
    recorded hash differs), else a binary named after a hash of the sources, the
    flags, those headers, the prefix and its recorded build inputs, under
    ``out_dir`` (default: the cache).
    """
    include_dirs = (*include_dirs, *INCLUDE_DIRS)
    fortran = any(Path(source).suffix in FORTRAN_SUFFIXES for source in sources)
    if fortran:
        name = name or Path(sources[-1]).stem
        sources = [FORTRAN_KILLPOINT, *(source for source in sources if Path(source) != FORTRAN_KILLPOINT)]
    digest = hashlib.sha256(str(prefix).encode() + "\0".join((*flags, *link)).encode())
    try:  # the build's inputs: an overlay may change the MPI headers, not the prefix path
        digest.update((prefix / MARKER).read_bytes())
    except OSError:
        pass
    for path in [*sources, *sorted(p for d in include_dirs for p in d.glob("*.h"))]:
        try:
            digest.update(path.read_bytes())
        except OSError:
            raise FtslideError(f"source {path} cannot be read") from None
    if output is None:
        out_dir = out_dir or cache_root() / "programs"
        binary = out_dir / f"{name or Path(sources[0]).stem}-{digest.hexdigest()[:12]}"
    else:
        binary = output
    stamp = binary.with_name(f"{binary.name}.sha256")
    binary.parent.mkdir(parents=True, exist_ok=True)
    if binary.exists() and (output is None or (stamp.exists() and stamp.read_text() == digest.hexdigest())):
        return binary
    partial = binary.with_name(f"{binary.name}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory(prefix="ftslide-modules-") as modules:
        # Fortran writes its .mod files into -J's folder, where the later sources find them.
        compiler = ["mpifort", f"-J{modules}"] if fortran else ["mpicc"]
        if not (prefix / "bin" / compiler[0]).exists():
            raise FtslideError(f"the Open MPI build at {prefix} has no {compiler[0]} (built without "
                               f"{'Fortran' if fortran else 'C'}): name one that has it with --mpi, or "
                               "run 'ftslide build-mpi'")
        cmd = [str(prefix / "bin" / compiler[0]), *compiler[1:], *flags, *(f"-I{d}" for d in include_dirs),
               "-o", str(partial), *map(str, sources), *link]
        result = subprocess.run(cmd, capture_output=True, text=True, env=mpi_environment(prefix))
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        first = next((line for line in result.stderr.splitlines() if "error" in line), result.stderr.strip())
        raise FtslideError(f"compiling {' '.join(map(str, sources))} failed: {first[:300]}")
    os.replace(partial, binary)
    if output is not None:
        stamp.write_text(digest.hexdigest())
    return binary


# The command-line options of Open MPI 5.0's mpirun (PRRTE 3, ompi personality), by
# arity, so that the program can be found among the arguments. Long options take
# one or two dashes; an option's value may also follow '='.
_TWO_VALUES = {"mca", "gmca", "prtemca", "pmixmca", "omca", "gomca"}
_ONE_VALUE = {
    "np", "n", "c", "N", "H", "host", "hostfile", "machinefile", "default-hostfile", "app", "x",
    "map-by", "rank-by", "bind-to", "display", "runtime-options", "output", "output-directory",
    "output-filename", "stdin", "preload-files", "wdir", "wd", "path", "pset", "personality", "dvm",
    "tune", "launch-agent", "max-vm-size", "tmpdir", "prefix", "forward-signals", "xterm", "timeout",
    "spawn-timeout", "report-pid", "report-uri", "max-restarts", "with-ft", "initial-errhandler",
    "memory-alloc-kinds", "arch", "file", "display-topo", "cpu-set", "cpu-list", "cpus-per-proc",
    "cpus-per-rank", "npernode", "npersocket", "ppr", "amca", "am", "rankfile", "stream-buffering",
}
_NO_VALUE = {
    "h", "help", "V", "version", "v", "verbose", "p", "parseable", "parsable", "s", "preload-binary",
    "fwd-environment", "output-proctable", "debug-daemons", "debug-daemons-file",
    "leave-session-attached", "noprefix", "allow-run-as-root", "report-child-jobs-separately",
    "stop-on-exec", "stop-in-init", "stop-in-app", "report-state-on-timeout", "get-stack-traces",
    "no-aggregate-help", "show-progress", "do-not-launch", "enable-recovery", "disable-recovery",
    "continuous", "display-comm", "display-comm-finalize", "soft", "xml", "tag-output",
    "timestamp-output", "merge-stderr-to-stdout", "display-devel-map", "report-bindings", "display-map",
    "display-allocation", "nolocal", "oversubscribe", "nooversubscribe", "use-hwthread-cpus",
    "bind-to-core", "bynode", "bycore", "byslot", "pernode", "debug",
}


def split_program(args: Sequence[str]) -> tuple[list[str], str, list[str]]:
    """Split ``[mpirun options] PROGRAM [ARGS]``; raise FtslideError on a bad option or no program."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            if i + 1 >= len(args):
                break
            return list(args[:i]), args[i + 1], list(args[i + 2:])
        if not arg.startswith("-") or arg == "-":
            return list(args[:i]), arg, list(args[i + 1:])
        name, has_value = arg.lstrip("-").split("=", 1)[0], "=" in arg
        if name in _TWO_VALUES:
            i += 2 if has_value else 3
        elif name in _ONE_VALUE:
            i += 1 if has_value else 2
        elif name in _NO_VALUE:
            i += 1
        else:
            raise FtslideError(f"unknown mpirun option {arg!r}: see mpirun(1), or 'mpirun --help' "
                               "after eval \"$(ftslide env)\"")
        if i > len(args):
            raise FtslideError(f"mpirun option {arg!r} needs a value")
    raise FtslideError("no program given: ftslide run [mpirun options] PROGRAM [ARGS]")


def check_program(program: str) -> None:
    """Raise FtslideError unless ``program`` is an executable file or a command on PATH."""
    if "/" in program:
        path = Path(program)
        if not path.is_file():
            raise FtslideError(f"program {program} does not exist")
        if not os.access(path, os.X_OK):
            raise FtslideError(f"program {program} is not executable (chmod +x {program})")
    elif shutil.which(program) is None:
        raise FtslideError(f"program {program!r} is not on PATH; give its path (./{program})")


class MpirunTimeout(FtslideError):
    """mpirun ran past its timeout; ``stdout``/``stderr`` hold what it printed until then."""

    def __init__(self, message: str, stdout: str, stderr: str, stacks: str = "") -> None:
        super().__init__(message)
        self.stdout, self.stderr, self.stacks = stdout, stderr, stacks


def process_stacks(pids: Sequence[int]) -> str:
    """The stacks of ``pids``: every thread's backtrace by ``gdb -batch`` where gdb is installed,
    else the kernel's view (state and wait channel from /proc). Shells (launch wrappers) get the
    kernel's view only; an MPI process is named by its rank."""
    parts = []
    gdb = shutil.which("gdb")
    for pid in sorted(pids):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            command = b" ".join(argv).decode(errors="replace").strip()
            state = next((line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if line.startswith("State:")), "")
            wchan = Path(f"/proc/{pid}/wchan").read_text().strip()
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        rank = next((e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"OMPI_COMM_WORLD_RANK=")), None)
        text = f"== pid {pid}{f' (rank {rank})' if rank else ''}: {command}\n{state}, waiting in {wchan or '-'}\n"
        if gdb and os.path.basename(argv[0]).decode(errors="replace") not in ("sh", "bash", "dash"):
            try:
                text += subprocess.run([gdb, "-batch", "-p", str(pid), "-ex", "thread apply all bt"],
                                       capture_output=True, text=True, timeout=30).stdout
            except subprocess.TimeoutExpired:
                text += "(gdb did not answer within 30 s)\n"
        parts.append(text)
    return "\n".join(parts)


# The result line of the runtime's example applications (``jacobi3d: done ... checksum=0x...``,
# heat2d's alike; ftslide/sliding/runtime.py reads them): once it is out, the job's work is done.
RESULT_LINE = re.compile(r"\b[a-z][a-z0-9_]*: done iterations=\S+ .*checksum=0x[0-9a-f]+")
# Seconds the processes get to end after the result line before the watch ends the job.
FINALIZE_GRACE = 10.0


@dataclass(frozen=True)
class ResultWatch:
    """End a job whose processes outlive its result line (``pattern``, searched in each complete
    line of stdout) by ``grace`` seconds, as for an MPI whose ``MPI_Finalize`` hangs after failures;
    ``quiet``: do not print the one line on stderr (it is still added to the result's stderr)."""

    pattern: re.Pattern[str]
    grace: float = FINALIZE_GRACE
    quiet: bool = False


class MpiResult(subprocess.CompletedProcess):
    """A finished launch; ``ended_after_result`` is the one line saying why the job was ended after
    its result was out (None when it ended by itself)."""

    ended_after_result: str | None = None


def default_watch(prefix: Path) -> ResultWatch | None:
    """The watch every launch of ``prefix`` gets unless told: RESULT_LINE and FINALIZE_GRACE when
    the prefix's finalize probe (features.finalize_after_failures, read from its cache only: a launch
    never probes) found MPI_Finalize hanging after failures; None otherwise (the project's build:
    a hang there is a bug to see, not to hide)."""
    from .features import cached_finalize  # features runs its probe through this module
    answer = cached_finalize(prefix)
    return ResultWatch(RESULT_LINE) if answer is not None and answer.get("ok") is False else None


def _notice(prefix: Path, watch: ResultWatch) -> str:
    from .features import describe_mpi
    return (f"the result is in, but {describe_mpi(prefix)} did not end MPI_Finalize within {watch.grace:g} s "
            "(after failures it hangs there in upstream Open MPI; the project's build ends); the job was ended")


def _pump(stream, parts: list[str], watch: ResultWatch | None, seen: list[float], echo=None) -> None:
    for line in iter(stream.readline, ""):
        parts.append(line)
        if echo is not None:
            echo.write(line)
            echo.flush()
        if watch is not None and not seen and line.endswith("\n") and watch.pattern.search(line):
            seen.append(time.monotonic())
    stream.close()


def _timed_out(timeout: float | None, argv: Sequence[str], out: str, err: str, stacks: str) -> "MpirunTimeout":
    return MpirunTimeout(f"mpirun did not finish within {timeout:.0f} s and was killed: {' '.join(argv)}",
                         out, err, stacks)


def run(prefix: Path, args: Sequence[str], timeout: float | None = None, capture: bool = True,
        env: dict[str, str] | None = None, stacks_on_timeout: bool = False,
        wrap: Callable[[list[str]], list[str]] | None = None,
        watch: ResultWatch | None | str = "default", echo: bool = False) -> MpiResult:
    """Run ``mpirun --with-ft ulfm ARGS`` in its own session, which is killed when it ends or times out
    (MpirunTimeout; with ``stacks_on_timeout`` its ``stacks`` hold every stuck process's stacks).
    ``wrap`` turns the mpirun argv into the one to run (e.g. across an emulated cluster).

    ``watch`` (a ResultWatch; "default": default_watch's, i.e. on only for an MPI found to hang in
    MPI_Finalize after failures; None: off) ends a job whose processes outlive its result line by
    the watch's grace: the result's ``ended_after_result`` holds one line naming the cause, which is
    also added to its stderr and (unless the watch is quiet) printed on stderr. A watch needs
    ``capture``; with ``echo`` a watched job's output is also passed on to ours as it comes."""
    ensure_stdin()
    if watch == "default":
        watch = default_watch(prefix) if capture else None
    assert watch is None or isinstance(watch, ResultWatch)
    argv = mpirun_argv(prefix, args)
    if wrap is not None:
        argv = wrap(argv)
    full_env = launch_environment(prefix)
    full_env.update(env or {})
    name, value = run_marker()
    full_env[name] = value
    scratch = launch_scratch(full_env)
    # mpirun forwards stdin to rank 0 and hangs when stdin is closed: give it /dev/null.
    try:
        proc = subprocess.Popen(argv, env=full_env, text=True, start_new_session=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if capture else None,
                                stderr=subprocess.PIPE if capture else None)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    ended: str | None = None
    try:
        if watch is None or not capture:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                stacks = process_stacks(processes_with(f"{name}={value}")) if stacks_on_timeout else ""
                kill_processes(proc.pid, f"{name}={value}")
                out, err = proc.communicate()
                raise _timed_out(timeout, argv, out or "", err or "", stacks) from None
        else:
            out_parts: list[str] = []
            err_parts: list[str] = []
            seen: list[float] = []
            pumps = [threading.Thread(target=_pump, args=(proc.stdout, out_parts, watch, seen,
                                                          sys.stdout if echo else None), daemon=True),
                     threading.Thread(target=_pump, args=(proc.stderr, err_parts, None, seen,
                                                          sys.stderr if echo else None), daemon=True)]
            for pump in pumps:
                pump.start()
            deadline = None if timeout is None else time.monotonic() + timeout
            while proc.poll() is None:
                now = time.monotonic()
                if seen and now - seen[0] > watch.grace:
                    ended = _notice(prefix, watch)
                    kill_processes(proc.pid, f"{name}={value}")
                    break
                if deadline is not None and now > deadline:
                    stacks = process_stacks(processes_with(f"{name}={value}")) if stacks_on_timeout else ""
                    kill_processes(proc.pid, f"{name}={value}")
                    proc.wait()
                    for pump in pumps:
                        pump.join(timeout=10)
                    raise _timed_out(timeout, argv, "".join(out_parts), "".join(err_parts), stacks)
                time.sleep(0.1)
            proc.wait()
            for pump in pumps:
                pump.join(timeout=10)
            out, err = "".join(out_parts), "".join(err_parts)
            if ended is not None:
                err += f"ftslide: {ended}\n"
                if not watch.quiet:
                    print(f"ftslide: {ended}", file=sys.stderr, flush=True)
    finally:
        # Ranks or daemons that outlive mpirun (or a timeout) are killed too.
        kill_processes(proc.pid, f"{name}={value}")
        proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    result = MpiResult(argv, proc.returncode, out, err)
    result.ended_after_result = ended
    return result


# Where a launch's runtime files go (MCA parameter -> environment variable that sets it): prterun's
# session directory (PMIx rendezvous files, per-job folders) and the shared-memory segments of the sm
# BTL and osc. A SIGKILLed rank never unlinks its segment, so each launch gets a folder of its own
# that is removed when mpirun ends; the program's own TMPDIR is left alone.
LAUNCH_SCRATCH_VARIABLES = ("PRTE_MCA_prte_tmpdir_base", "OMPI_MCA_btl_sm_backing_directory",
                            "OMPI_MCA_osc_sm_backing_directory")


def launch_scratch(env: dict[str, str]) -> Path:
    """A fresh folder for one launch's runtime files (in /dev/shm where it exists), set in ``env``
    for every variable of LAUNCH_SCRATCH_VARIABLES the caller has not set."""
    shm = Path("/dev/shm")
    scratch = Path(tempfile.mkdtemp(prefix="ftslide-run-", dir=shm if shm.is_dir() else None))
    for variable in LAUNCH_SCRATCH_VARIABLES:
        env.setdefault(variable, str(scratch))
    return scratch


def ensure_stdin() -> None:
    """Open /dev/null as file descriptor 0 if stdin is closed (mpirun hangs on a closed stdin)."""
    try:
        os.fstat(0)
    except OSError:
        fd = os.open(os.devnull, os.O_RDONLY)
        if fd != 0:
            os.dup2(fd, 0)
            os.close(fd)


def kill_processes(session_id: int, marker: str | None = None) -> None:
    """SIGKILL the session that ``session_id`` leads and every process whose environment holds ``marker``.

    ``marker`` is a ``NAME=value`` string: PRRTE starts ranks in sessions of their
    own, but they inherit the launcher's environment.
    """
    try:
        os.killpg(session_id, signal.SIGKILL)
    except ProcessLookupError:
        pass
    needle = marker.encode() if marker else None
    for proc_dir in Path("/proc").glob("[0-9]*"):
        pid = int(proc_dir.name)
        if pid == os.getpid():
            continue
        try:
            stat = (proc_dir / "stat").read_text()
            ours = int(stat.rsplit(")", 1)[1].split()[4]) == session_id
            if not ours and needle is not None:
                ours = needle in (proc_dir / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ours:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def processes_with(*entries: str) -> list[int]:
    """Pids of the processes (other than this one) whose environment holds every ``NAME=value``
    of ``entries``, e.g. a launch's marker and ``OMPI_COMM_WORLD_RANK=2``."""
    needles = [entry.encode() for entry in entries]
    pids = []
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            env = set((proc_dir / "environ").read_bytes().split(b"\0"))
        except OSError:
            continue
        if all(needle in env for needle in needles) and int(proc_dir.name) != os.getpid():
            pids.append(int(proc_dir.name))
    return pids


def run_marker() -> tuple[str, str]:
    """A fresh (name, value) environment marker that identifies one launch and its descendants."""
    return "FTSLIDE_RUN_ID", uuid.uuid4().hex


# A CPU spinner that stops by itself once the process that started it (its argument) is no longer its
# parent: a campaign killed with SIGKILL leaves no spinner behind for long.
SPINNER = "import os, sys\nparent = int(sys.argv[1])\nwhile os.getppid() == parent:\n    sum(range(100000))\n"


@contextmanager
def busy(count: int) -> Iterator[list[int]]:
    """``count`` busy processes (Python loops, each in a session of its own, without the campaign's
    run markers: never a run's leftover) while the block runs; yields their pids. They are SIGKILLed
    and reaped when the block ends, however it ends."""
    spinners: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            spinners.append(subprocess.Popen([sys.executable, "-S", "-c", SPINNER, str(os.getpid())],
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL, start_new_session=True))
        yield [spinner.pid for spinner in spinners]
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()
