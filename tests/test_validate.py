"""ftslide validate: real Open MPI runs of every substitution map on an emulated 3D torus beside SimGrid.

Correctness only (the figures are the benchmark's, bench/validate.py): the document has every method with
a measured and a predicted slowdown and the error between them, the maps put no rank on a failed node,
and the cluster (namespaces, state, processes) is gone afterwards, also when the run is interrupted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ftslide.jobmgr import cluster as netcluster

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"), pytest.mark.mpi]

REPO = Path(__file__).resolve().parent.parent


def leftovers(name: str) -> list[str]:
    left = [ns for ns in netcluster.existing_namespaces() if ns.startswith(f"{name}-")]
    if netcluster.state_path(name).exists():
        left.append(str(netcluster.state_path(name)))
    return left


def remove(name: str) -> None:
    """Whatever a failed test left of cluster ``name``."""
    try:
        netcluster.down(name)
    except Exception:  # noqa: BLE001 - the assertion below reports what is left
        pass
    for netns in [ns for ns in netcluster.existing_namespaces() if ns.startswith(f"{name}-")]:
        netcluster.kill_namespace(netns)
        subprocess.run(["ip", "netns", "del", netns], check=False)


def validate(*args: str, cwd: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ftslide", "validate", *args], cwd=cwd,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            **kwargs)


@pytest.mark.timeout(400)
def test_every_method_on_a_3d_torus(tmp_path):
    name = f"v{uuid.uuid4().hex[:8]}"
    proc = validate("--topology", "torus:3x3x3", "--spares", "x:1", "--methods", "simple,slide1d,hybrid,routed",
                    "--failures", "2", "--seed", "3", "--rate", "8mbit", "--halo", "32K", "--iterations", "1",
                    "--repeats", "1", "--timeout", "120", "--name", name, "--out", "out", "--json", cwd=tmp_path)
    try:
        out, err = proc.communicate(timeout=380)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        remove(name)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc == json.loads((tmp_path / "out" / "validate.json").read_text())
    assert (tmp_path / "out" / "validate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (doc["topology"], doc["ranks"], doc["spare_nodes"]) == ("torus:3x3x3", 18, 9)
    failed = set(doc["failed_nodes"])
    assert len(failed) == 2 and failed <= set(range(27))
    base = doc["failure_free"]
    assert base["measured_time"] > 0 and base["predicted_time"] > 0
    assert [m["method"] for m in doc["methods"]] == ["simple", "slide1d", "hybrid", "routed"]
    for m in doc["methods"]:
        assert m["error"] is None, m
        hosts = m["hosts"]
        assert len(set(hosts)) == 18 and not failed & set(hosts), m  # one rank per node, none on a failed one
        assert m["measured_slowdown"] > 0 and m["predicted_slowdown"] > 0
        assert m["measured_time"] > 0 and m["time_error_pct"] == pytest.approx(
            (m["predicted_time"] - m["measured_time"]) / m["measured_time"] * 100, abs=0.05)
        assert m["error_pct"] == pytest.approx(
            (m["predicted_slowdown"] - m["measured_slowdown"]) / m["measured_slowdown"] * 100, abs=0.05)
    assert not leftovers(name)


@pytest.mark.timeout(200)
def test_interrupted_run_leaves_nothing(tmp_path):
    name = f"v{uuid.uuid4().hex[:8]}"
    proc = validate("--topology", "torus:3x3x3", "--methods", "simple", "--rate", "1mbit", "--halo", "256K",
                    "--name", name, "--out", "out", cwd=tmp_path)
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            if (netcluster.cluster_dir() / name / "agent").exists() and any(
                    p.startswith(f"{name}-") for p in netcluster.existing_namespaces()):
                break
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.5)
        time.sleep(8)  # into the first mpirun
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        left = leftovers(name)
        remove(name)
    assert proc.returncode != 0 and "Traceback" not in err, err
    assert not left, left
    assert not (tmp_path / "out").exists()
