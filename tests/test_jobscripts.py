"""ftslide jobscript: what the Slurm, PBS Pro, Torque and Flux scripts say, that they are valid
shell, that the PBS script's launch line runs a ULFM job, and the one-line errors of bad input.

Only the Slurm scripts are also submitted to real daemons (tests/test_jobmgr_slurm.py); there
is no PBS or Flux server here (docs/jobmgr.md).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from ftslide.toolchain.mpi import kill_processes, run_marker
from mpiharness import parse_run
from test_build import assert_one_line_error, ftslide

pytestmark = [pytest.mark.mpi, pytest.mark.timeout(120)]


def generate(manager: str, *args: str, command: tuple[str, ...] = ("/bin/true",)) -> str:
    result = ftslide("jobscript", manager, *args, "--", *command)
    assert result.returncode == 0, result.stderr
    return result.stdout


def directives(text: str, prefix: str) -> list[str]:
    return [line[len(prefix):].strip() for line in text.splitlines() if line.startswith(prefix)]


def assert_valid_shell(text: str, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text(text)
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def assert_directives_first(text: str, prefix: str) -> None:
    """Managers read directives up to the first command: all of them come before it."""
    lines = text.splitlines()
    first_command = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    assert all(i < first_command for i, line in enumerate(lines) if line.startswith(prefix))


def mpirun_line(text: str) -> str:
    """The mpirun command with its continuation lines joined."""
    joined = text.replace("\\\n", " ")
    return next(line for line in joined.splitlines() if "/bin/mpirun\"" in line)


@pytest.mark.parametrize("manager", ["slurm", "pbs", "torque", "flux"])
def test_every_script_is_valid_shell_running_our_mpirun(manager, mpi_prefix, tmp_path):
    text = generate(manager, "--nodes", "2", "--ntasks-per-node", "4", "--time", "90", "--name", "stencil",
                    "--env", "A=x y", command=("--mca", "btl", "tcp,self", "sh", "-c", "echo $HOME; exit 3"))
    assert text.startswith("#!/bin/bash\n")
    assert_valid_shell(text, tmp_path)
    assert f"prefix={mpi_prefix}\n" in text
    line = mpirun_line(text)
    assert line.startswith('"$prefix/bin/mpirun" --with-ft ulfm -np 8 ')
    assert line.endswith("--mca btl tcp,self sh -c 'echo $HOME; exit 3'"), line
    assert "export A='x y'\n" in text
    assert "exit $status" in text


def test_slurm_script(tmp_path):
    text = generate("slurm", "--nodes", "3", "--ntasks-per-node", "2", "--time", "1-02:03:04", "--name", "jac",
                    "--queue", "debug", "--job-output", "/tmp/jac-%j.out")
    assert directives(text, "#SBATCH") == ["--job-name=jac", "--nodes=3", "--ntasks-per-node=2", "--no-kill",
                                           "--time=26:03:04", "--partition=debug", "--output=/tmp/jac-%j.out"]
    assert_directives_first(text, "#SBATCH")
    # PRRTE's daemons are started by srun (plm slurm), in a step that outlives a failed node and
    # a daemon's bad exit.
    assert '--prtemca plm slurm --prtemca plm_slurm_args "--no-kill --kill-on-bad-exit=0"' in mpirun_line(text)
    assert "-np 6 " in mpirun_line(text)


def test_pbs_pro_script(tmp_path):
    text = generate("pbs", "--nodes", "4", "--ntasks-per-node", "8", "--time", "30", "--queue", "workq",
                    "--job-output", "/scratch/out.txt")
    assert directives(text, "#PBS") == ["-N ftslide", "-l select=4:ncpus=8:mpiprocs=8", "-l place=scatter",
                                        "-W tolerate_node_failures=all", "-l walltime=0:30:00", "-j oe",
                                        "-q workq", "-o /scratch/out.txt"]
    assert_directives_first(text, "#PBS")
    assert '--hostfile "$PBS_NODEFILE" --prtemca plm ssh' in mpirun_line(text)
    assert 'cd "${PBS_O_WORKDIR:-.}"' in text


def test_torque_script_says_it_cannot_keep_nodes(tmp_path):
    text = generate("torque", "--nodes", "2", "--ntasks-per-node", "3", "--time", "0:05:00")
    assert directives(text, "#PBS") == ["-N ftslide", "-l nodes=2:ppn=3", "-l walltime=0:05:00", "-j oe"]
    assert "tolerate_node_failures=all" not in "\n".join(directives(text, "#PBS"))
    assert "Torque has no job attribute like PBS Pro's tolerate_node_failures" in text


def test_flux_script(tmp_path):
    text = generate("flux", "--nodes", "5", "--ntasks-per-node", "2", "--time", "2", "--queue", "batch")
    assert directives(text, "# flux:") == ["--job-name=ftslide", "-N 5", "--exclusive", "-o exit-timeout=none",
                                           "--conf=tbon.topo=kary:0", "--broker-opts=-Sbroker.critical-ranks=0",
                                           "-t 120s", "--queue=batch"]
    assert_directives_first(text, "# flux:")
    assert "flux hostlist --expand instance" in text and 'echo "$host slots=2"' in text
    assert '--hostfile "$hostfile" --prtemca plm ssh' in mpirun_line(text)


def test_program_path_is_absolute_and_np_can_be_given(tmp_path):
    """A program given by relative path is written by absolute path; a -np among the mpirun
    options replaces the script's own."""
    text = generate("slurm", "--nodes", "2", "--ntasks-per-node", "2", command=("-np", "3", "./bootstrap", "x"))
    line = mpirun_line(text)
    repo = Path(__file__).resolve().parent.parent
    assert line.endswith(f"-np 3 {repo}/bootstrap x"), line
    assert line.count("-np") == 1


def test_output_file_is_written_executable(tmp_path):
    out = tmp_path / "job.sh"
    result = ftslide("jobscript", "pbs", "--nodes", "1", "--ntasks-per-node", "1", "-o", str(out), "--", "/bin/true")
    assert result.returncode == 0 and result.stdout == "", result.stderr
    assert "submit with 'qsub" in result.stderr
    assert os.access(out, os.X_OK) and out.read_text().startswith("#!/bin/bash")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sh"]


def test_pbs_launch_line_runs_a_ulfm_job_here(mpi_program, tmp_path):
    """Without a PBS server: the PBS script itself, with a $PBS_NODEFILE listing this machine four
    times, runs the shrink program with rank 2 SIGKILLed; the survivors shrink and the script exits 0.
    This checks the script's own shell and mpirun line, not PBS."""
    program = mpi_program("conformance/shrink.c")
    script = tmp_path / "job.sh"
    made = ftslide("jobscript", "pbs", "--nodes", "1", "--ntasks-per-node", "4", "-o", str(script),
                   "--env", "FTSLIDE_KILL=2@after_barrier", "--", "--oversubscribe", str(program))
    assert made.returncode == 0, made.stderr
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("localhost\n" * 4)
    name, value = run_marker()
    env = {**os.environ, "PBS_NODEFILE": str(nodefile), "PBS_O_WORKDIR": str(tmp_path), name: value}
    proc = subprocess.Popen(["bash", str(script)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        kill_processes(proc.pid, f"{name}={value}")
        proc.wait()
    run = parse_run(proc.returncode, out, err)
    assert run.killed == {2: "after_barrier"}, run.describe()
    assert run.values("finished", [0, 1, 3]) == {0: "1", 1: "1", 3: "1"}, run.describe()
    assert run.values("b_order", [0, 1, 3]) == dict.fromkeys([0, 1, 3], "0,1,3"), run.describe()
    assert proc.returncode == 0 and "ftslide job: mpirun exited with status 0" in err, run.describe()


def test_help():
    assert "jobscript" in ftslide("--help").stdout
    result = ftslide("jobscript", "--help")
    assert result.returncode == 0
    for option in ("--nodes", "--ntasks-per-node", "--time", "--queue", "--job-output", "--env", "--output"):
        assert option in result.stdout


@pytest.mark.parametrize("args, phrase", [
    (["sge", "--nodes", "1", "--ntasks-per-node", "1", "--", "/bin/true"], "invalid choice"),
    (["slurm", "--nodes", "0", "--ntasks-per-node", "1", "--", "/bin/true"], "--nodes 0"),
    (["slurm", "--nodes", "x", "--ntasks-per-node", "1", "--", "/bin/true"], "invalid int value"),
    (["slurm", "--nodes", "1", "--ntasks-per-node", "0", "--", "/bin/true"], "--ntasks-per-node 0"),
    (["slurm", "--ntasks-per-node", "1", "--", "/bin/true"], "required: --nodes"),
    (["pbs", "--nodes", "1", "--ntasks-per-node", "1", "--time", "soon", "--", "/bin/true"], "not a time limit"),
    (["pbs", "--nodes", "1", "--ntasks-per-node", "1", "--time", "0", "--", "/bin/true"], "longer than zero"),
    (["flux", "--nodes", "1", "--ntasks-per-node", "1", "--name", "9lives", "--", "/bin/true"], "--name"),
    (["flux", "--nodes", "1", "--ntasks-per-node", "1", "--queue", "a b", "--", "/bin/true"], "--queue"),
    (["slurm", "--nodes", "1", "--ntasks-per-node", "1", "--job-output", "/tmp/a b", "--", "/bin/true"],
     "without spaces"),
    (["slurm", "--nodes", "1", "--ntasks-per-node", "1", "--env", "NOVALUE", "--", "/bin/true"], "NAME=VALUE"),
    (["slurm", "--nodes", "1", "--ntasks-per-node", "1", "--env", "1X=2", "--", "/bin/true"], "not a variable"),
    (["slurm", "--nodes", "1", "--ntasks-per-node", "1", "/bin/true"], "after '--'"),
    (["slurm", "--nodes", "1", "--ntasks-per-node", "1", "--"], "no program"),
    (["slurm", "--nodes", "1", "--ntasks-per-node", "1", "--", "/no/such/program"], "does not exist"),
    (["slurm", "--nodes", "1", "--ntasks-per-node", "1", "--", "no-such-command-xyz"], "not on PATH"),
    (["slurm", "--nodes", "1", "--ntasks-per-node", "1", "--", "--frobnicate", "/bin/true"],
     "unknown mpirun option"),
])
def test_bad_input_is_a_one_line_error_and_writes_nothing(args, phrase, tmp_path):
    out = tmp_path / "job.sh"
    if "--" in args:
        cut = args.index("--")
        args = [*args[:cut], "-o", str(out), *args[cut:]]
    result = ftslide("jobscript", *args)
    assert_one_line_error(result, phrase)
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_is_a_one_line_error(tmp_path):
    result = ftslide("jobscript", "slurm", "--nodes", "1", "--ntasks-per-node", "1", "-o",
                     str(tmp_path / "missing" / "job.sh"), "--", "/bin/true")
    assert_one_line_error(result, "does not exist")
    assert list(tmp_path.iterdir()) == []
    result = ftslide("jobscript", "slurm", "--nodes", "1", "--ntasks-per-node", "1", "-o", str(tmp_path),
                     "--", "/bin/true")
    assert_one_line_error(result, "is a folder")
    assert list(tmp_path.iterdir()) == []


def test_script_is_not_executable_text_injection(tmp_path):
    """Arguments with quotes, '$' and newlines stay data: the script prints them back verbatim."""
    tricky = "a'b\"c $(touch %s/pwned) `x`\nnext" % tmp_path
    text = generate("pbs", "--nodes", "1", "--ntasks-per-node", "1", "--env", f"V={tricky}",
                    command=("/bin/echo", tricky))
    assert_valid_shell(text, tmp_path)
    # The same script with mpirun replaced by printf: it prints the variable and mpirun's arguments.
    probe = tmp_path / "probe.sh"
    probe.write_text(text.replace('"$prefix/bin/mpirun"', 'printf "%s|" "$V"; printf "%s|"'))
    result = subprocess.run(["bash", str(probe)], capture_output=True, text=True,
                            env={**os.environ, "PBS_O_WORKDIR": str(tmp_path), "PBS_NODEFILE": "NF"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"{tricky}|--with-ft|ulfm|-np|1|--hostfile|NF|--prtemca|plm|ssh|"
                             f"--mca|coll|^han|/bin/echo|{tricky}|")
    assert not (tmp_path / "pwned").exists()
    assert re.search(r"^# PBS job script generated by: [^\n]*$", text, re.M)
