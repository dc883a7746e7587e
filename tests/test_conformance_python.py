"""ULFM from Python: every ULFM method of mpi4py (Comm.Revoke, Is_revoked, Shrink, Ishrink, Agree,
Iagree, Get_failed, Ack_failed) in the programs of tests/mpi/python, with real processes and a real
SIGKILL at a named point (ftslide_killpoint.py), under our modules and under upstream's; the mpi4py
that ./bootstrap builds against the project's Open MPI, `ftslide run python3 ...`, the README's Python
example, and an mpi4py of another MPI refused in one line. The docstrings say which rank dies where."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ftslide.toolchain import pympi
from ftslide.toolchain.mpi import PYTHON_KILLPOINT_DIR
from ftslide.toolchain.native import REPO
from mpiharness import MODULES, OK, PF, REVOKED, assert_all, assert_shrunk_twice, check_survive_output
from test_build import assert_one_line_error, ftslide

pytestmark = pytest.mark.mpi

VENV_BIN = Path(sys.executable).parent


@MODULES
def test_errors_get_failed_ack_failed(run_python, modules):
    """np 3, rank 2 killed after a barrier: Recv from it raises PROC_FAILED; an ANY_SOURCE wait raises
    PROC_FAILED_PENDING and stays pending; Get_failed = {2}; Ack_failed() = 1; then the wait completes."""
    run = run_python("python/errors.py", 3, kill={2: "after_barrier"}, mpirun_options=modules)
    assert run.value(0, "recv_from_dead") == PF, run.describe()
    assert run.value(0, "send_to_live") == OK
    assert (run.value(1, "recv_from_live"), run.value(1, "value")) == (OK, "99")
    assert run.value(0, "first_wait") == "MPIX_ERR_PROC_FAILED_PENDING"
    assert run.value(0, "still_pending") == "1"
    assert run.value(0, "failed") == "2"
    assert (run.value(0, "ack_failed"), run.value(0, "acked")) == (OK, "1")
    assert run.value(0, "second_wait") == OK
    assert (run.value(0, "value"), run.value(0, "source")) == ("42", "1")
    assert_all(run, "finished", [0, 1], "1")
    assert run.returncode == 0, run.describe()


@MODULES
def test_revoke_is_revoked_shrink(run_python, modules):
    """np 4, rank 3 killed after a barrier: rank 0 calls Comm.Revoke; a pending receive, a barrier and
    a send raise REVOKED at every survivor; Is_revoked; Shrink keeps 0,1,2 and works."""
    run = run_python("python/revoke.py", 4, kill={3: "after_barrier"}, mpirun_options=modules)
    survivors = [0, 1, 2]
    assert run.value(0, "revoke") == OK, run.describe()
    assert_all(run, "pending_recv", [1, 2], REVOKED)
    for key, expected in (("later_barrier", REVOKED), ("later_send", REVOKED), ("is_revoked", "1"),
                          ("shrink", OK), ("shrunk_size", "3"), ("shrunk_order", "0,1,2"),
                          ("shrunk_allreduce", OK), ("shrunk_sum", "3"), ("finished", "1")):
        assert_all(run, key, survivors, expected)


@MODULES
def test_shrink_and_ishrink(run_python, modules):
    """np 5, ranks 1 and 3 killed after a barrier: Comm.Shrink and Comm.Ishrink (MPIX_Comm_ishrink of
    patch ompi/09; the communicator is null until its request completes) keep 0,2,4 in order."""
    run = run_python("python/shrink.py", 5, kill={1: "after_barrier", 3: "after_barrier"}, mpirun_options=modules)
    survivors = [0, 2, 4]
    assert_shrunk_twice(run, survivors)


@MODULES
@pytest.mark.parametrize("variant", ["agree", "iagree"])
def test_agree_iagree(run_python, modules, variant):
    """np 4, rank 3 killed after the first agreement: the AND of the flags; PROC_FAILED at every
    survivor until Ack_failed (Ack_failed(0) acknowledges none, Ack_failed() the one); then success."""
    run = run_python("python/agree.py", 4, args=[variant], kill={3: "after_first_agree"}, mpirun_options=modules)
    survivors = [0, 1, 2]
    assert run.values("first_rc", [0, 1, 2, 3]) == {r: OK for r in range(4)}, run.describe()
    assert run.values("first_flag", [0, 1, 2, 3]) == {r: "6" for r in range(4)}
    expected = [("unacked_rc", PF), ("unacked_again_rc", PF), ("failed", "3"), ("ack_none_rc", OK),
                ("acked_none", "0"), ("ack_failed", OK), ("acked", "1"), ("acked_rc", OK), ("acked_flag", "3"),
                ("finished", "1")]
    if variant == "iagree":
        expected.append(("unacked_flag", "5"))
    for key, value in expected:
        assert_all(run, key, survivors, value)


def launch_environment() -> dict[str, str]:
    """The user's set-up of the README: the project's .venv/bin first on PATH, the kill points on PYTHONPATH."""
    return {"PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}", "PYTHONPATH": str(PYTHON_KILLPOINT_DIR)}


def test_survive_example_with_ftslide_run():
    """The README's Python example through `ftslide run -np 4 python3 survive.py`: rank 2 SIGKILLed at
    iteration 5, rank 1 at 12; the same output as survive.c (check_survive_output)."""
    example = REPO / "ompi-ulfm" / "examples" / "survive.py"
    result = ftslide("run", "-np", "4", "python3", str(example), "20", timeout=120,
                     env={**launch_environment(), "FTSLIDE_KILL": "2@iter=5,1@iter=12"})
    assert result.returncode == 0, result.stderr
    assert "ftslide: rank 2 killed at iter=5" in result.stderr and "ftslide: rank 1 killed at iter=12" in result.stderr
    check_survive_output(result.stdout)


def test_mpi4py_is_ours_and_cached(mpi_prefix):
    """./bootstrap built mpi4py against the project's Open MPI: it loads the build's libmpi, has the ULFM
    calls, and a second `ftslide build-mpi4py` reuses it (it says so) without building or installing."""
    found = pympi.probe(sys.executable, mpi_prefix)
    assert found["mpi4py"] == pympi.MPI4PY_VERSION and found["ulfm"], found
    assert Path(str(found["libmpi"])).resolve().parent == (mpi_prefix / "lib").resolve(), found
    result = ftslide("build-mpi4py")
    assert result.returncode == 0 and "reusing" in result.stderr, result.stderr
    assert Path(result.stdout.strip()).parent == pympi.wheel_dir(mpi_prefix)
    assert pympi.cache_key(mpi_prefix) != pympi.cache_key(mpi_prefix.with_name("openmpi-other"))


FAKE_MPI4PY = '''
import ctypes
ctypes.CDLL({library!r})  # what a build against another MPI loads
ERR_UNKNOWN, ERR_REVOKED = 14, 77
def Get_library_version():
    return "Open MPI v4.1.4, package: Debian OpenMPI"
class Comm:
    def Ishrink(self): pass
'''


def another_mpi4py(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in mpi4py package whose MPI module loads a libmpi.so.40 of its own, as one built against
    another MPI would: (the folder to put first on PYTHONPATH, that libmpi)."""
    other = tmp_path / "other-mpi" / "lib"
    other.mkdir(parents=True)
    (tmp_path / "empty.c").write_text("int other_mpi_marker;\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(other / "libmpi.so.40"), str(tmp_path / "empty.c")],
                   check=True)
    package = tmp_path / "site" / "mpi4py"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        f"__version__ = {pympi.MPI4PY_VERSION!r}\nclass _RC: pass\nrc = _RC()\n")
    (package / "MPI.py").write_text(FAKE_MPI4PY.format(library=str(other / "libmpi.so.40")))
    return package.parent, other / "libmpi.so.40"


def test_mpi4py_of_another_mpi_is_refused(tmp_path):
    """An mpi4py that loads another libmpi (here a stand-in package first on PYTHONPATH whose MPI module
    loads a libmpi.so.40 of its own), and a Python without mpi4py: `ftslide run` refuses each in one
    line naming `ftslide build-mpi4py`, with a non-zero exit, before launching anything."""
    site, libmpi = another_mpi4py(tmp_path)
    program = tmp_path / "prog.py"
    program.write_text("raise SystemExit('launched')\n")
    env = {**launch_environment(), "PYTHONPATH": str(site)}
    result = ftslide("run", "-np", "2", "python3", str(program), env=env)
    assert_one_line_error(result, "built against another MPI", str(libmpi), "Open MPI v4.1.4",
                          "ftslide build-mpi4py")
    assert "launched" not in result.stderr + result.stdout
    bare = Path("/usr/bin/python3")
    if bare.exists() and subprocess.run([str(bare), "-c", "import mpi4py"], capture_output=True).returncode != 0:
        assert_one_line_error(ftslide("run", "-np", "2", str(bare), str(program)), "has no mpi4py",
                              "ftslide build-mpi4py")


def test_is_python():
    assert all(pympi.is_python(p) for p in ("python", "python3", "python3.11", "/usr/bin/python3", ".venv/bin/python"))
    assert not any(pympi.is_python(p) for p in ("pythonista", "./survive", "python3-config", "ipython"))
