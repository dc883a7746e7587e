"""Compiling and launching MPI programs with the project's Open MPI build."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

from .errors import FtslideError
from .native import REPO
from .ompi_build import cache_root, mpi_environment

# Headers every MPI program of the project may include (ftslide_killpoint.h, ...).
INCLUDE_DIRS = (REPO / "ompi-ulfm" / "include",)


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
                    flags: Sequence[str] = ("-O2",), out_dir: Path | None = None) -> Path:
    """Compile C ``sources`` with the build's ``mpicc``; reuse the binary while nothing changed.

    The binary is named after a hash of the sources, the flags, the headers in
    INCLUDE_DIRS and the prefix, under ``out_dir`` (default: the cache).
    """
    digest = hashlib.sha256(str(prefix).encode() + "\0".join(flags).encode())
    for path in [*sources, *sorted(p for d in INCLUDE_DIRS for p in d.glob("*.h"))]:
        try:
            digest.update(path.read_bytes())
        except OSError:
            raise FtslideError(f"source {path} cannot be read") from None
    out_dir = out_dir or cache_root() / "programs"
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = out_dir / f"{name or Path(sources[0]).stem}-{digest.hexdigest()[:12]}"
    if binary.exists():
        return binary
    partial = binary.with_suffix(".partial")
    cmd = [str(prefix / "bin" / "mpicc"), *flags, *(f"-I{d}" for d in INCLUDE_DIRS),
           "-o", str(partial), *map(str, sources)]
    result = subprocess.run(cmd, capture_output=True, text=True, env=mpi_environment(prefix))
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        first = next((line for line in result.stderr.splitlines() if "error" in line), result.stderr.strip())
        raise FtslideError(f"compiling {' '.join(map(str, sources))} failed: {first[:300]}")
    os.replace(partial, binary)
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


def run(prefix: Path, args: Sequence[str], timeout: float | None = None, capture: bool = True,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``mpirun --with-ft ulfm ARGS`` in its own session, which is killed when it ends or times out."""
    argv = mpirun_argv(prefix, args)
    full_env = launch_environment(prefix)
    full_env.update(env or {})
    proc = subprocess.Popen(argv, env=full_env, text=True, start_new_session=True,
                            stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.PIPE if capture else None)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        out, err = proc.communicate()
        raise FtslideError(f"mpirun did not finish within {timeout:.0f} s and was killed: "
                           f"{' '.join(argv)}") from None
    finally:
        # Ranks or daemons that outlive mpirun (or a timeout) go with its session.
        kill_session(proc.pid)
        proc.wait()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def kill_session(session_id: int) -> None:
    """SIGKILL every process of the session that ``session_id`` leads (mpirun and its ranks)."""
    try:
        os.killpg(session_id, 9)
    except ProcessLookupError:
        pass
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc_dir / "stat").read_text()
            sid = int(stat.rsplit(")", 1)[1].split()[4])
        except (OSError, ValueError, IndexError):
            continue
        if sid == session_id:
            try:
                os.kill(int(proc_dir.name), 9)
            except ProcessLookupError:
                pass
