"""The ftslide command: run, env, doctor, demo and their errors, with the real build."""

from __future__ import annotations

import subprocess

import pytest

from test_build import assert_one_line_error, ftslide

pytestmark = pytest.mark.mpi


def test_help_lists_the_commands():
    result = ftslide("--help")
    assert result.returncode == 0
    for command in ("doctor", "build-mpi", "env", "run", "demo"):
        assert command in result.stdout


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
    assert "apt-get install -y libsimgrid-dev" in result.stdout
    assert "ftslide build-mpi" in result.stdout


def test_demo_survives_killed_ranks():
    """ftslide demo, np 4: rank 2 SIGKILLed at iteration 5, rank 1 at iteration 12; survivors finish."""
    result = ftslide("demo", timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 recoveries, 2 survivors" in result.stdout
    assert "PASS" in result.stdout


def test_demo_bad_input():
    assert_one_line_error(ftslide("demo", "--kill", "9@3"), "outside the run")
    assert_one_line_error(ftslide("demo", "--kill", "0@3"), "rank 0")
    assert_one_line_error(ftslide("demo", "--kill", "two"), "RANK@ITERATION")
