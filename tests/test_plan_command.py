"""``ftslide plan`` through the real CLI: layouts within the budget, the ranking, the JSON, the plot,
spare sets on a fat-tree, the MTBF path, a SimGrid confirmation on a small torus, and bad input.

Small machines only (a 6x5 torus, a 32-host fat-tree, a 4x4x3 torus for SimGrid), few draws."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ftslide.sliding.topology import parse_topology
from ftslide.simulation import plan as pl

REPO = Path(__file__).resolve().parent.parent
FAT_TREE = "fattree:2;4,8;1,4;1,1"   # 32 hosts, 8 leaf switches of 4


def ftslide_plan(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ftslide", "plan", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, cwd=REPO, timeout=timeout)


def plans(*args: str) -> dict:
    result = ftslide_plan(*args, "--json", "--top", "0")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_torus_plans_ranked_within_the_budget(tmp_path: Path) -> None:
    plot = tmp_path / "plan.png"
    result = ftslide_plan("--topology", "torus:6x5", "--failures", "2", "--spare-nodes", "12", "--draws", "4",
                          "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    assert plot.stat().st_size > 0 and not list(tmp_path.glob(".*tmp"))
    assert "stencil5" in result.stdout and result.stdout.strip().splitlines()[-1].startswith("best: spares ")
    doc = plans("--topology", "torus:6x5", "--failures", "2", "--spare-nodes", "12", "--draws", "4")
    layouts = {p["spares"] for p in doc["plans"]}
    assert layouts == {"x:1", "x:2", "y:1", "y:2", "x:1,y:1"}          # y:2 = 12 spare nodes, the budget
    assert all(p["spare_nodes"] <= 12 for p in doc["plans"]) and doc["failures"] == 2
    keys = [(p["p_out"], p["stuck"] > 0, p["worst"]) for p in doc["plans"] if p["worst"] is not None]
    assert keys == sorted(keys)
    assert doc["plans"][0]["curve"] and len(doc["plans"][0]["curve"]["stencil"]) == 2
    # slide2d can place one failure per spare plane only: with x:1 it runs out in every draw
    s2d = next(p for p in doc["plans"] if p["spares"] == "x:1" and p["method"] == "slide2d")
    assert s2d["p_out"] > 0 and doc["plans"].index(s2d) > 0


def test_spare_sets_per_leaf_switch() -> None:
    assert pl.block_sizes(parse_topology(FAT_TREE)) == {"leaf": 4}
    assert pl.block_sizes(parse_topology("torus:4x4")) == {}
    # 2 groups of 2 chassis of 2 routers of 2 hosts: 2 hosts per router, 8 per group
    assert pl.block_sizes(parse_topology("dragonfly:2,1;2,1;2,1;2")) == {"leaf": 2, "group": 8}
    doc = plans("--topology", FAT_TREE, "--grid", "torus:4x4x2", "--failures", "2", "--spare-nodes", "16",
                "--draws", "2", "--methods", "hybrid,routed")
    by_layout = {p["spares"]: p for p in doc["plans"]}
    assert "z:1/4:1" in by_layout                       # one spare in every leaf switch
    assert by_layout["z:1/4:1"]["spare_nodes"] == 8 and by_layout["z:1/4:1"]["idle_nodes"] == 16
    assert not any(s.startswith("x:1/") for s in by_layout)   # x = 3 fills whole leaves: no even set


def test_mtbf_sets_the_failures() -> None:
    # 30 job nodes, MTBF 100 h, 5 h: 1.5 failures expected; 99 % of runs see at most 5 (P(<= 4) = 0.981)
    doc = plans("--topology", "torus:6x6", "--layouts", "x:1", "--mtbf", "100", "--hours", "5",
                "--spare-nodes", "6", "--draws", "2", "--methods", "routed")
    assert doc["failures"] == 5 and doc["mtbf_hours"] == 100
    assert 0.0008 < doc["plans"][0]["p_out"] < 0.0011      # P(more than 6 failures) with a mean of 1.5


def test_simulate_confirms_the_best_plan() -> None:
    doc = plans("--topology", "torus:4x4x3", "--layouts", "x:1", "--failures", "1", "--spare-nodes", "12",
                "--draws", "2", "--methods", "routed,simple", "--simulate", "1", "--trials", "1")
    best = doc["plans"][0]
    assert set(best["simulated"]) == set(pl.PATTERNS) and all(v > 0 for v in best["simulated"].values())
    assert doc["plans"][1]["simulated"] is None


@pytest.mark.parametrize("args, phrase", [
    (["--topology", "torus:6x5", "--failures", "8", "--spare-nodes", "4"], "8 failures need at least 8 spare nodes"),
    (["--topology", "torus:6x5", "--failures", "2", "--spare-nodes", "3"], "no spare layout of at most 3 spare nodes"),
    (["--topology", "torus:6x5", "--failures", "2", "--spare-nodes", "12", "--layouts", "x:6"], "does not fit"),
    (["--topology", "torus:6x5", "--failures", "2", "--spare-nodes", "5", "--layouts", "x:2"], "above --spare-nodes 5"),
    (["--topology", "torus:6x5", "--spare-nodes", "5"], "give the failures to survive"),
    (["--topology", "torus:6x5", "--failures", "0", "--spare-nodes", "5"], "--failures must be at least 1"),
    (["--topology", "fattree:4", "--failures", "1", "--spare-nodes", "4"], "give the stencil's node grid"),
    (["--topology", "fattree:4", "--grid", "torus:8x8", "--failures", "1", "--spare-nodes", "8"], "hosts"),
    (["--topology", "torus:6x5", "--failures", "1", "--spare-nodes", "5", "--methods", "shrink"], "uses no spare"),
    (["--topology", "torus:6x5", "--failures", "1", "--spare-nodes", "5", "--plot", "/nonexistent/p.png"],
     "does not exist"),
    (["--failures", "1", "--spare-nodes", "5"], "no machine"),
])
def test_bad_input(args: list[str], phrase: str, tmp_path: Path) -> None:
    result = ftslide_plan(*args)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert phrase in lines[0], lines[0]
    assert result.stdout == ""
