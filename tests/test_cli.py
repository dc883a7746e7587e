"""The ftslide command: run, env, doctor, demo and their errors, with the real build."""

from __future__ import annotations

import subprocess

import pytest

from test_build import assert_one_line_error, ftslide

pytestmark = pytest.mark.mpi


def test_help_lists_the_commands():
    result = ftslide("--help")
    assert result.returncode == 0
    for command in ("doctor", "build-mpi", "build-mpi4py", "env", "run", "demo", "map", "simulate", "protocols", "cluster"):
        assert command in result.stdout


def test_the_parser_reads_no_library():
    """--help and doctor work before any C is built: the names of methods, statuses and kill points
    are read from the libraries when a command uses them, not when the parser is built."""
    import sys

    code = ("import ftslide.cli as cli; from ftslide.sliding import core, runtime, topology; cli.build_parser(); "
            "assert core._lib.cache_info().currsize == topology._lib.cache_info().currsize == 0; "
            "assert runtime._names.cache_info().currsize == 0")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_unknown_command_and_option():
    assert_one_line_error(ftslide("frobnicate"), "invalid choice")
    assert_one_line_error(ftslide("run", "--frobnicate", "-np", "2", "/bin/true"), "unknown mpirun option",
                          "--frobnicate")
    assert_one_line_error(ftslide("run", "-np", "2"), "no program")
    assert_one_line_error(ftslide("run", "-np"), "needs a value")


def test_missing_program(tmp_path):
    assert_one_line_error(ftslide("run", "-np", "2", str(tmp_path / "nothing")), "does not exist")
    assert_one_line_error(ftslide("run", "-np", "2", "no-such-command-xyz"), "not on PATH")
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\n")
    assert_one_line_error(ftslide("run", "-np", "2", str(script)), "not executable")


def test_run_starts_ranks_with_ulfm(mpi_program):
    """ftslide run gives ULFM (revoke works) and oversubscribes by default: 6 ranks on 2 cores."""
    revoke = mpi_program("conformance/revoke.c")
    result = ftslide("run", "-np", "4", "--mca", "mpi_ft_verbose", "0", str(revoke), timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("is_revoked=1") == 4
    six = ftslide("run", "-np", "6", "/bin/echo", "x", timeout=60)
    assert six.returncode == 0 and six.stdout.split() == ["x"] * 6, six.stderr


def test_env_puts_the_build_first(mpi_prefix):
    lines = ftslide("env").stdout
    shown = subprocess.run(["bash", "-c", f"{lines}\ncommand -v mpicc; command -v mpirun"],
                           capture_output=True, text=True)
    assert shown.stdout.split() == [str(mpi_prefix / "bin" / "mpicc"), str(mpi_prefix / "bin" / "mpirun")]


def test_doctor_passes_on_a_complete_setup():
    result = ftslide("doctor")
    assert result.returncode == 0, result.stdout
    assert "all" in result.stdout and "MISSING" not in result.stdout


def test_doctor_names_the_fix_for_a_missing_tool(tmp_path):
    """With an empty PATH and no build, doctor names the install command of each missing piece, exit 1."""
    result = ftslide("doctor", env={"PATH": str(tmp_path), "FTSLIDE_CACHE": str(tmp_path)})
    assert result.returncode == 1
    assert "apt-get install -y build-essential" in result.stdout
    assert "apt-get install -y gfortran" in result.stdout
    assert "apt-get install -y libsimgrid-dev" in result.stdout
    assert "ftslide build-mpi4py" in result.stdout
    assert "ftslide build-mpi" in result.stdout


def test_demo_survives_killed_nodes():
    """ftslide demo, torus:3x2x2 with a spare plane: node 1 SIGKILLed at iteration 12, node 6 at 23."""
    result = ftslide("demo", timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 recoveries" in result.stdout
    assert "PASS" in result.stdout and "FAIL" not in result.stdout


def test_demo_bad_input():
    assert_one_line_error(ftslide("demo", "--kill", "99@3"), "nodes 0..11")
    assert_one_line_error(ftslide("demo", "--method", "shrink"), "simulation baseline")
    assert_one_line_error(ftslide("demo", "--method", "sideways"), "choose simple, slide1d, slide2d, hybrid")
    assert_one_line_error(ftslide("demo", "--grid", "torus:3x2x"), "grid")
    assert_one_line_error(ftslide("demo", "--kill", "two"), "NODE@ITERATION")
    assert_one_line_error(ftslide("demo", "--iterations", "0"), "--iterations")


def test_survive_example(mpi_prefix):
    """ompi-ulfm/examples/survive.c, np 4: rank 2 SIGKILLed at iteration 5, rank 1 at 12; 2 survivors finish."""
    from ftslide.toolchain.mpi import compile_program
    from ftslide.toolchain.native import REPO
    from mpiharness import check_survive_output, run_program

    binary = compile_program(mpi_prefix, [REPO / "ompi-ulfm" / "examples" / "survive.c"])
    run = run_program(mpi_prefix, binary, 4, args=["20"], kill={2: "iter=5", 1: "iter=12"})
    assert run.returncode == 0, run.describe()
    check_survive_output(run.stdout)


def test_env_links_libsliding(tmp_path):
    """With the lines of ftslide env, a program compiles against sliding.h and links libsliding.so."""
    program = tmp_path / "uses_sliding.c"
    program.write_text('#include "sliding.h"\nint main(void) { return sliding_strerror(SLIDING_OK)[0] != 115; }\n')
    lines = ftslide("env").stdout
    built = subprocess.run(["bash", "-c", f'{lines}\nmpicc $SLIDING_CFLAGS -o {tmp_path}/a.out {program} $SLIDING_LIBS '
                            f'&& ldd {tmp_path}/a.out && {tmp_path}/a.out'], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert "libsliding.so =>" in built.stdout
