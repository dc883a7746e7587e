"""bench/sliding_recovery/redundancy.py --quick: every redundancy policy recovers a killed node with
the right checksum, and the results have the structure the bench documents (not its timings)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ftslide.toolchain.mpi import kill_processes

pytestmark = pytest.mark.mpi

BENCH = Path(__file__).resolve().parents[1] / "bench" / "sliding_recovery" / "redundancy.py"
TIMEOUT = 300  # seconds; the quick run takes under 2 minutes on this machine under load


def bench_module():
    spec = importlib.util.spec_from_file_location("bench_redundancy", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The bench in a session of its own; whatever it started is killed when it ends or times out
    (its MPI launches inherit a marker in their environment)."""
    name, value = "FTSLIDE_BENCH_TEST", uuid.uuid4().hex
    proc = subprocess.Popen([sys.executable, str(BENCH), *args], cwd=tmp_path, env={**os.environ, name: value},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        kill_processes(proc.pid, f"{name}={value}")
        out, err = proc.communicate()
        pytest.fail(f"the bench did not end within {TIMEOUT} s: {err[-2000:]}")
    finally:
        kill_processes(proc.pid, f"{name}={value}")
        proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_quick_run_recovers_every_policy_with_the_right_checksum(tmp_path, mpi_prefix):
    bench = bench_module()
    results = tmp_path / "results.json"
    files = tmp_path / "files"
    files.mkdir()
    done = run_bench(tmp_path, "--quick", "--json", str(results), "--checkpoint-root", str(files))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(results.read_text())
    options = doc["options"]
    assert options["ks"] == [1] and options["repeat"] == 1
    rows = doc["policy_rows"]
    assert [(row["K"], row["policy"]) for row in rows] == [(1, policy) for policy in bench.POLICIES]
    iterations = options["checkpoint_every"] * (options["checkpoints"] + 2)
    last_checkpoint = options["checkpoint_every"] * options["checkpoints"]
    ranks = bench.node_ranks(1)
    want = bench.expected_checksum(ranks, options["bytes"] // 8, iterations, options["passes"])
    state = options["bytes"]
    for row in rows:
        assert row["errors"] == [] and row["recovered_valid"] == row["runs"] == 1, row["errors"]
        sample = row["samples"][0]
        assert sample["valid"] is True and sample["checksum"] == want, row["policy"]
        assert sample["resumed_at"] == last_checkpoint, row["policy"]  # the victim died after it
        assert sample["recovery_s"] > 0 and sample["checkpoint_s"] > 0
        assert len(sample["checkpoint_samples"]) == options["checkpoints"] - 1  # the first is left out
        for key in ("checkpoint_ratio", "recovery_ratio", "memory_ratio"):
            assert isinstance(row[key], float), (row["policy"], key)
    memory = {row["policy"]: row["redundancy_bytes_per_node"] for row in rows}
    assert memory["buddy"] == state  # a whole copy, K = 1
    # Erasure-coded policies keep a share of the state: about 1/3 (parity:4, rs:8,2) and 1/7 (parity:8).
    assert 0 < memory["parity:8"] < memory["parity:4"] < state
    assert 0 < memory["rs:8,2"] < state
    files_rows = doc["file_rows"]
    assert len(files_rows) == 1 and files_rows[0]["errors"] == []
    launch = files_rows[0]["samples"][0]
    assert launch["files"] >= options["file_pairs"] and len(launch["pairs"]) == options["file_pairs"]
    assert files_rows[0]["pairs"] == options["file_pairs"] and files_rows[0]["ratio"] > 0
    assert list(files.iterdir()) == []  # the file level's directories are removed
    assert {target["target"].split(" ", 1)[0] for target in doc["targets"]} == {"K=1"}
    assert len(doc["targets"]) == 2 and doc["failed_runs"] == []
    for heading in ("ckpt/buddy", "mem/buddy", "recovered ok", "ms/it with", "Targets (issue 38):"):
        assert heading in done.stdout


def test_bad_options_give_one_line_and_start_nothing(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH), "--ks", "3"], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith("--ks takes distinct numbers among [1, 2, 4], not '3'")
