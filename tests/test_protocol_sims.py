"""Scale simulation of the protocol cores (issue 5): the SimGrid driver ftproto_sim and
``ftslide protocols check|simulate``.

Every driver run and CLI call is bounded by a subprocess timeout; platforms stay at
P = 64 so the whole file takes a few seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ftslide.simulation import protocols as ps
from ftslide.errors import FtslideError

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 60.0
P = 64

needs_simgrid = pytest.mark.skipif(not Path("/usr/include/simgrid/s4u.hpp").exists() and shutil.which("smpirun") is None,
                                   reason="SimGrid (libsimgrid-dev) is not installed")


def ftslide(*args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "ftslide", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module", params=["torus", "fattree"])
def platform(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    topo = ps.topology_for(request.param, P)
    return ps.write_platform(topo, tmp_path_factory.mktemp(request.param) / "platform.xml")


def test_auto_topologies_have_exactly_p_hosts() -> None:
    for p in (64, 1000, 4096, 65536):
        assert ps.topology_for("torus", p).hosts == p
    for p in (64, 256, 4096, 65536):
        assert ps.topology_for("fattree", p).hosts == p
    assert str(ps.topology_for("torus", 4096)) == "torus:16x16x16"
    assert str(ps.topology_for("fattree", 65536)) == "fattree:4;16,16,16,16;1,16,16,16;1,1,1,1"


def _check_uniform(out: dict, proto: str) -> None:
    assert out["ok"] and out["quiescent"]
    alive = out["alive"]
    assert alive == P - len(out["crashed"])
    decisions = out["decisions"]
    assert len(decisions) == out["decided"]
    if proto.startswith("bmg") and out["decided"] == 0:
        return  # the broadcaster died before anyone heard it: nothing delivered anywhere
    assert out["decided"] == alive
    # Every live process decided the same value and the same failed set.
    assert len({(d["flag"], d["err"], d["failed"]) for d in decisions}) == 1


@needs_simgrid
@pytest.mark.parametrize("proto", ps.PROTOS)
def test_failure_free_everyone_decides_the_same(platform: Path, proto: str) -> None:
    out = ps.run_driver(platform, proto, P, dump=True, timeout=TIMEOUT)
    _check_uniform(out, proto)
    assert out["failed"] == [] and out["crashed"] == []
    if proto.startswith("era"):
        # Flag = AND of every contribution (each process clears bit rank % 64).
        assert out["flag"] == 0 and out["err"] == 0
        assert out["messages"] == (4 if proto == "era" else 2) * (P - 1)
    elif proto == "bmg-lean":
        assert out["messages"] == P - 1


@needs_simgrid
@pytest.mark.parametrize("proto", ps.AGREEMENTS)
def test_failure_free_messages_are_small_and_the_binary_tree_agrees(platform: Path, proto: str) -> None:
    # Sparse messages: without failures an UP is 56 bytes, a DOWN 44, an ACK 32,
    # whatever P (the old format carried three P-bit bitmaps).
    out = ps.run_driver(platform, proto, P, timeout=TIMEOUT)
    per_edge = 56 + 44 + (44 + 32 if proto == "era" else 0)
    assert out["bytes"] == per_edge * (P - 1)
    assert out["tree"] == "binomial"
    binary = ps.run_driver(platform, proto, P, dump=True, timeout=TIMEOUT, tree="binary")
    _check_uniform(binary, proto)
    assert binary["tree"] == "binary" and binary["flag"] == 0 and binary["failed"] == []
    assert binary["messages"] == out["messages"]


@needs_simgrid
@pytest.mark.parametrize("tree", ps.TREES)
@pytest.mark.parametrize("proto", ps.AGREEMENTS)
def test_agreement_with_failures_before_and_during(platform: Path, proto: str, tree: str) -> None:
    before = [(5, 0.0), (40, 0.0), (63, 0.0)]
    during = [(17, 2e-6), (33, 4.5e-6)]
    out = ps.run_driver(platform, proto, P, before + during, adversary=2, detect=1e-6, dump=True,
                        timeout=TIMEOUT, tree=tree)
    _check_uniform(out, proto)
    failed = set(out["failed"])
    crashed = set(out["crashed"])
    assert {5, 40, 63} <= failed  # dead before the start: never contributed
    assert failed <= crashed  # validity: only crashed processes are declared failed
    assert len(crashed) == 7  # 3 before, 2 scheduled, 2 roots killed by the adversary
    assert out["err"] == 1  # nobody acknowledged the failures


@needs_simgrid
@pytest.mark.parametrize("tree", ["binomial", "knomial4"])
@pytest.mark.parametrize("proto", ps.AGREEMENTS)
def test_torus_order_agrees_and_the_adversary_kills_its_roots(proto: str, tree: str, tmp_path: Path) -> None:
    topo = ps.topology_for("torus", P)  # torus:4x4x4: every ring of 4 folds to 0 1 3 2
    plat = ps.write_platform(topo, tmp_path / "torus.xml")
    dims = ps.torus_order(topo, P)
    before = [(5, 0.0), (40, 0.0)]
    out = ps.run_driver(plat, proto, P, before, adversary=3, dump=True, timeout=TIMEOUT, tree=tree, torus=dims)
    _check_uniform(out, proto)
    assert {5, 40} <= set(out["failed"]) <= set(out["crashed"])
    # roots in the folded order: rank 0, then 1, then 3 (key 2), not rank 2
    assert out["crashed"][2:] == [0, 1, 3]
    ar = ps.run_driver(plat, "allreduce", P, timeout=TIMEOUT)
    free = ps.run_driver(plat, "era", P, timeout=TIMEOUT, tree=tree, torus=dims)
    rank = ps.run_driver(plat, "era", P, timeout=TIMEOUT, tree=tree)
    assert free["messages"] == rank["messages"] == 4 * (P - 1)
    assert free["latency"] < 2 * ar["latency"]
    # the binomial tree crosses a ring of 4 in 2 hops instead of 3; on so small
    # a ring the 4-nomial tree's one level is as short either way
    assert free["latency"] < rank["latency"] if tree == "binomial" else free["latency"] <= rank["latency"]


@needs_simgrid
@pytest.mark.parametrize("proto", ["bmg", "bmg-lean"])
def test_broadcast_with_failures(platform: Path, proto: str) -> None:
    out = ps.run_driver(platform, proto, P, [(0, 0.0), (9, 0.0), (2, 1e-7), (12, 3e-7)], dump=True,
                        timeout=TIMEOUT)
    _check_uniform(out, proto)
    assert out["decided"] == out["alive"]  # rank 1 broadcasts (0 is dead) and stays alive


@needs_simgrid
@pytest.mark.parametrize("proto", ps.PROTOS)
def test_messages_of_a_crashed_sender_still_on_the_way_are_lost(platform: Path, proto: str) -> None:
    # A process that crashes while its messages cross the network: they are lost, and the run
    # goes on to quiescence (the driver aborted on the failed transfers before). The broadcaster
    # dies 1 ps in, so nobody delivers; the agreement loses rank 33's and 35's messages.
    crashes = [(0, 1e-12)] if proto.startswith("bmg") else [(61, 0.0), (5, 0.0), (33, 2e-6), (35, 4.5e-6)]
    out = ps.run_driver(platform, proto, P, crashes, adversary=0 if proto.startswith("bmg") else 2, dump=True,
                        timeout=TIMEOUT)
    _check_uniform(out, proto)
    if proto.startswith("bmg"):
        assert out["decided"] == 0 and out["crashed"] == [0] and out["messages"] > 0
    else:
        assert {5, 61} <= set(out["failed"]) <= set(out["crashed"]) and len(out["crashed"]) == 6


@needs_simgrid
def test_a_root_killed_on_a_failure_report_ends_quiescent(platform: Path) -> None:
    # Rank 2's crash, reported to the root, completes the root's round; the adversary kills the
    # root right there. Its pending reports were given up twice and the run never reached
    # quiescence (exit 1 with the old driver).
    out = ps.run_driver(platform, "era-early", P, [(2, 1.5e-6)], adversary=3, dump=True, timeout=TIMEOUT,
                        tree="knomial4")
    _check_uniform(out, "era-early")
    assert out["quiescent"] and len(out["crashed"]) == 4 and set(out["failed"]) <= set(out["crashed"])


@needs_simgrid
@pytest.mark.parametrize("proto", ps.AGREEMENTS)
def test_latency_grows_with_failures_during(proto: str, tmp_path: Path) -> None:
    res = ps.sweep(proto, [P], [0, 2, 4, 8], "torus", tmp_path, timeout=TIMEOUT)
    lat = [pt.latency for pt in res.points]
    assert lat == sorted(lat) and lat[-1] > 1.5 * lat[0]
    fit = res.fits[P]
    assert fit.b > 0 and fit.r2 > 0.9


def test_fit_recovers_a_known_curve() -> None:
    fs = list(range(0, 9))
    lat = [3.0 + 0.5 * ps.sum_log(1024, f) for f in fs]
    fit = ps.fit_sum_log(1024, fs, lat)
    assert fit.a == pytest.approx(3.0) and fit.b == pytest.approx(0.5) and fit.r2 == pytest.approx(1.0)


@needs_simgrid
def test_simulate_cli_prints_tables_allreduce_and_writes_outputs(tmp_path: Path) -> None:
    proc = ftslide("protocols", "simulate", "--p", "64", "--failures", "0..3", "--topology", "fattree",
                   "--proto", "era-early", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "allreduce_us" in proc.stdout and "ratio" in proc.stdout
    assert "(knomial4 tree, rank order)" in proc.stdout  # the defaults; no torus order off a torus
    assert "a + b * sum_{f=1..F} log2(P - f)" in proc.stdout
    stem = "protocols-era-early-during-knomial4"
    data = json.loads((tmp_path / f"{stem}.json").read_text())
    assert [pt["f"] for pt in data["points"]] == [0, 1, 2, 3]
    assert data["allreduce_latency_s"]["64"] > 0
    for name in ("latency", "messages", "residuals"):
        png = tmp_path / f"{stem}-{name}.png"
        assert png.read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / f"{stem}.csv").read_text().startswith("proto,p,f,")


@needs_simgrid
def test_simulate_cli_takes_the_torus_order_on_a_torus() -> None:
    proc = ftslide("protocols", "simulate", "--p", "64,256", "--failures", "0,2", "--proto", "era")
    assert proc.returncode == 0, proc.stderr
    assert "(knomial4 tree, torus order) on torus" in proc.stdout
    proc = ftslide("protocols", "simulate", "--p", "64", "--failures", "0", "--proto", "era", "--order", "rank",
                   "--tree", "binomial")
    assert proc.returncode == 0 and "(binomial tree, rank order)" in proc.stdout, proc.stderr


def test_check_cli_exhaustive_p3_passes() -> None:
    proc = ftslide("protocols", "check", "--p", "3", "--exhaustive")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("result: PASS") == 4
    for proto in ps.PROTOS:
        assert f"proto={proto} " in proc.stdout


def test_check_cli_binary_tree_passes_and_is_named() -> None:
    proc = ftslide("protocols", "check", "--p", "3", "--exhaustive", "--proto", "era-early", "--tree", "binary")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "result: PASS" in proc.stdout and "tree=binary" in proc.stdout


@pytest.mark.parametrize("args, needle", [
    (["simulate", "--p", "abc"], "bad process counts"),
    (["simulate", "--p", "1"], "between 2 and"),
    (["simulate", "--p", "64", "--failures", "x..3"], "bad failure counts"),
    (["simulate", "--p", "64", "--topology", "torus:0x4"], "bad topology"),
    (["simulate", "--p", "64", "--topology", "torus:2x2"], "fewer than P"),
    (["simulate", "--p", "64", "--topology", "hypercube:8"], "use torus:"),
    (["simulate", "--p", "64", "--detect", "soon"], "bad detection delay"),
    (["simulate", "--p", "8", "--failures", "0..8"], "at least one must survive"),
    (["check", "--p", "zz", "--proto", "bmg"], "--p"),
    (["simulate", "--p", "0"], "between 2 and"),
    (["simulate", "--p", "4194304"], "between 2 and"),
    # ~57 GB for a million actors with failures: refused before anything runs
    (["simulate", "--p", "1048576", "--failures", "0..8"], "largest P that fits"),
    (["simulate", "--p", "64", "--topology", "fattree", "--order", "torus"], "--order torus needs a torus"),
    (["simulate", "--p", "64", "--proto", "bmg-lean", "--order", "torus"], "applies to the agreement"),
])
def test_bad_input_is_one_line(args: list[str], needle: str) -> None:
    proc = ftslide("protocols", *args)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr


def test_memory_guard_names_the_largest_p() -> None:
    with pytest.raises(FtslideError, match="largest P that fits"):
        ps.check_memory("era", 65536, fraction=1e-3)
    # O(1) per simulated process (no P^2 term): 65,536 fits in a few GB.
    assert ps.memory_estimate("era", 65536) < 3e9
    assert ps.memory_estimate("era", 65536, failures=8) < 4 * 2**30
    assert ps.memory_estimate("era", 65536, failures=16) == ps.memory_estimate("era", 65536, failures=1)


def test_bad_tree_is_one_line() -> None:
    proc = ftslide("protocols", "simulate", "--p", "64", "--tree", "ternary")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "--tree" in proc.stderr
