"""Building the SMPI kernels with ``smpicc`` and running them with ``smpirun``.

The kernels (``simulations/smpi/ftsim_kernels.c``) are compiled on first use
into the cache (``cache_root()/smpi``), named after a hash of the source, the
flags and the ``smpicc`` path, like ``ftslide.toolchain.mpi.compile_program`` does for
``mpicc``: CMake's compiler is the system ``cc``, while SMPI programs must go
through SimGrid's wrapper, and building lazily keeps ``ftslide simulate``
working without a CMake tree (and reports a missing ``smpicc`` when used).

Errors and cost: FtslideError when ``smpicc``/``smpirun`` are missing, a compile fails, or a
simulation fails or times out. ``build_kernels`` costs one compile per source change (seconds);
``run_kernels`` one ``smpirun`` per uncached configuration (seconds to minutes), a file read when
cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import FtslideError
from ..toolchain.native import REPO
from ..toolchain.ompi import cache_root
from .network import NetParams
from .platform import SEND_WORK_PROPERTY

__all__ = ["KERNEL_SOURCE", "smpi_root", "tool", "build_kernels", "KernelRun", "run_kernels", "kill_running"]

KERNEL_SOURCE = REPO / "simulations" / "smpi" / "ftsim_kernels.c"
CFLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes", "-Werror",
          f'-DFTSIM_SEND_WORK_PROPERTY="{SEND_WORK_PROPERTY}"')  # the platform's name for it
INSTALL_HINT = "install SimGrid's SMPI with 'apt-get install libsimgrid-dev' (or run ./bootstrap setup)"

# smpirun processes running now (several threads may run one each), so that an
# interrupted sweep can kill them instead of waiting for them.
_LIVE: set[subprocess.Popen[str]] = set()
_LIVE_LOCK = threading.Lock()

_LINE = re.compile(r"^ftsim pattern=(\w+) bytes=(\d+) iters=(\d+) time=([0-9.eE+-]+)$")


def smpi_root() -> Path:
    """Cache folder of the SMPI kernels' binaries and results."""
    return cache_root() / "smpi"


def tool(name: str) -> str:
    """Path of smpicc/smpirun; FtslideError naming the package if missing."""
    path = shutil.which(name)
    if path is None:
        raise FtslideError(f"{name} not found on PATH: {INSTALL_HINT}")
    return path


def build_kernels() -> Path:
    """The kernel binary, compiled once per source/flags/compiler."""
    smpicc = tool("smpicc")
    try:
        source = KERNEL_SOURCE.read_bytes()
    except OSError:
        raise FtslideError(f"kernel source {KERNEL_SOURCE} is missing: restore it from git") from None
    digest = hashlib.sha256(source + "\0".join((smpicc, *CFLAGS)).encode()).hexdigest()[:16]
    out_dir = smpi_root() / "bin"
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = out_dir / f"ftsim_kernels-{digest}"
    if binary.exists():
        return binary
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        partial = Path(tmp) / binary.name
        result = subprocess.run([smpicc, *CFLAGS, "-o", str(partial), str(KERNEL_SOURCE)],
                                check=False, capture_output=True, text=True, cwd=tmp)
        if result.returncode != 0 or not partial.exists():
            first = next((ln for ln in result.stderr.splitlines() if "error" in ln),
                         result.stderr.strip() or "no output")
            raise FtslideError(f"smpicc could not compile {KERNEL_SOURCE.name}: {first[:300]}")
        os.replace(partial, binary)
    return binary


@dataclass(frozen=True)
class KernelRun:
    """One smpirun: a platform, a hostfile and the kernels to run in order."""

    platform: str          # XML text
    hostfile: str          # one host name per rank
    stencil_dims: tuple[int, ...]
    periodic: bool
    kernels: tuple[str, ...]  # "stencil:BYTES", "barrier", "allreduce:BYTES"
    iters: int
    net: NetParams

    def key(self, binary: Path) -> str:
        text = json.dumps([self.platform, self.hostfile, self.stencil_dims, self.periodic,
                           self.kernels, self.iters, self.net.speed, binary.name, _CFG])
        return hashlib.sha256(text.encode()).hexdigest()


# Pure max-min sharing (CM02) without TCP cross-traffic: each directed link is
# shared fairly by the flows crossing it, which is what the analytic model counts.
# Collectives: SMPI's default barrier (linear) and allreduce (reduce + bcast) are
# naive; Open MPI's dissemination barrier and the recursive-doubling allreduce are
# what MPI libraries use for small messages, and what the analytic model counts.
_CFG = ("--cfg=smpi/simulate-computation:no", "--cfg=network/model:CM02",
        "--cfg=smpi/barrier:ompi_bruck", "--cfg=smpi/allreduce:rdb",
        "--cfg=network/crosstraffic:0", "--cfg=contexts/stack-size:256",
        "--log=root.thres:critical")


def run_kernels(run: KernelRun, timeout: float = 600.0, use_cache: bool = True) -> dict[str, float]:
    """Simulated seconds per repetition of each kernel: {"stencil": t, ...}.

    Results are cached by the run's full configuration (platform, hostfile,
    kernel arguments, binary). The smpirun process group is killed on timeout.
    """
    binary = build_kernels()
    smpirun = tool("smpirun")
    key = run.key(binary)
    cached = smpi_root() / "runs" / key[:2] / f"{key}.json"
    if use_cache and cached.exists():
        try:
            return {k: float(v) for k, v in json.loads(cached.read_text()).items()}
        except (OSError, ValueError):
            pass
    np_ = run.hostfile.count("\n")
    with tempfile.TemporaryDirectory(prefix="ftsim-") as tmp:
        plat = Path(tmp) / "platform.xml"
        hosts = Path(tmp) / "hostfile"
        plat.write_text(run.platform)
        hosts.write_text(run.hostfile)
        cmd = [smpirun, "-platform", str(plat), "-hostfile", str(hosts), "-np", str(np_),
               "-no-privatize", f"--cfg=smpi/host-speed:{run.net.speed:.6g}f",
               *_CFG, str(binary), "x".join(map(str, run.stencil_dims)),
               "1" if run.periodic else "0", str(run.iters), *run.kernels]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=tmp, start_new_session=True)
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise FtslideError(f"smpirun did not finish within {timeout:.0f} s ({np_} ranks): "
                               f"use a smaller topology or raise --timeout") from None
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
    times: dict[str, float] = {}
    for line in out.splitlines():
        m = _LINE.match(line.strip())
        if m:
            times[m.group(1)] = float(m.group(4))
    wanted = [k.split(":")[0] for k in run.kernels]
    if proc.returncode != 0 or any(k not in times for k in wanted):
        last = next((ln for ln in reversed(err.splitlines()) if ln.strip()), "no output")
        raise FtslideError(f"smpirun failed (exit {proc.returncode}): {last[:300]}")
    if use_cache:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(times))
        os.replace(partial, cached)
    return times


def kill_running() -> None:
    """Kill every smpirun this process started that is still running (on interrupt)."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
