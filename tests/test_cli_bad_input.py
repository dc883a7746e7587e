"""Malformed input to every subcommand: exit != 0, one line on stderr naming the problem, no traceback,
no hang, nothing written in the working folder and no network namespace left behind.

Each case runs `python -m ftslide ...` in a fresh folder holding one plain file, `afile`, so that paths
through a file can be given; the folder must hold exactly that file afterwards.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# (arguments, a phrase the error line must contain)
CASES = [
    ("map --grid 4x", "bad --grid"),
    ("map --grid torus:0x4", "at most 16777216"),
    ("map --grid 4x4 --spares x:9", "does not fit grid"),
    ("map --grid 4x4 --fail 1,,2", "bad failure"),
    ("map --grid 4x4 --method nope", "unknown method 'nope'"),
    ("map --grid 4x4 --plot /nonexistent/dir/x.png", "does not exist"),
    ("map --grid 4x4 --plot afile/x.png", "is a file, not a folder"),
    ("map --grid 6x6x6 --route-order xx", "bad routing order"),
    ("map --grid 6x6x6 --expect-failures abc", "invalid int value"),
    ("map --grid 6x6x6 --method routed --expect-failures 99", "spare budget"),
    ("map --topology dragonfly:1,1 --grid 2x2", "bad topology"),
    ("map --grid 4x4 --ranks-per-node 0", "--ranks-per-node"),
    ("map --grid 4x4 --ranks-per-node 2 --block 2x1x1", "bad block '2x1x1'"),
    ("map --grid 4x4 --block 2x1", "needs --ranks-per-node"),
    ("simulate --preset k --out afile", "is a file"),
    ("simulate --preset nope --out o", "invalid choice"),
    ("simulate --topology torus:4x4x4 --failures 0..999 --out o", "lower --failures"),
    ("simulate --topology torus:4x4x4 --patterns foo --out o", "unknown pattern"),
    ("simulate --topology torus:4x4x4 --methods foo --out o", "unknown method"),
    ("simulate --topology torus:4x4x4 --trials 0 --out o", "--trials"),
    ("simulate --topology torus:4x4x4 --bw fast --out o", "bad bandwidth"),
    ("simulate --topology torus:4x4x4 --lat -1 --out o", "bad latency"),
    ("simulate --topology torus:4x4x4 --halo 1Q --out o", "bad --halo"),
    ("simulate --topology fattree:4 --out o", "--grid"),
    ("simulate --topology torus:4x4x4 --route-order abc --out o", "bad routing order"),
    ("simulate --topology torus:4x4x4 --failures 3,-1 --out o", "bad failure counts"),
    ("simulate --topology torus:4x4x4 --timeout -5 --out o", "--timeout"),
    ("simulate --topology torus:4x4x4 --jobs -1 --out o", "--jobs"),
    ("simulate --topology torus:4x4x4 --ranks-per-node 3 --block 2x1x1 --out o", "holds 2 ranks but a node runs 3"),
    ("simulate --topology torus:4x4x4 --ranks-per-node -2 --out o", "--ranks-per-node"),
    ("protocols simulate --p 0", "bad process counts"),
    ("protocols simulate --p abc", "bad process counts"),
    ("protocols simulate --p 16 --failures 16", "at least one must survive"),
    ("protocols simulate --p 16 --topology nope", "bad topology"),
    ("protocols simulate --p 16 --proto nope", "invalid choice"),
    ("protocols check --p -1", "--p"),
    ("cluster up --topology torus:0x3", "not valid"),
    ("cluster up --topology nope:3", "not valid"),
    ("cluster up --nodes 3 --topology torus:2x2", "has 4 nodes"),
    ("cluster up --nodes 0", "--nodes"),
    ("cluster up --nodes 3 --rate fast", "rate 'fast'"),
    ("cluster up --nodes 3 --rate 1bit", "out of range"),
    ("cluster up --nodes 3 --name 'bad name'", "cluster name"),
    ("cluster down --name doesnotexist", "no cluster 'doesnotexist'"),
    ("cluster kill-node 3 --name doesnotexist", "no cluster 'doesnotexist'"),
    ("cluster status --name doesnotexist", "no cluster 'doesnotexist'"),
    ("run --cluster doesnotexist -np 2 hostname", "no cluster 'doesnotexist'"),
    ("jobscript slurm --nodes 0 --ntasks-per-node 2 -- hostname", "--nodes 0"),
    ("jobscript slurm --nodes 2 --ntasks-per-node 2 --time xyz -- hostname", "--time 'xyz'"),
    ("jobscript nope --nodes 2 --ntasks-per-node 2 -- hostname", "invalid choice"),
    ("jobscript slurm --nodes 2 --ntasks-per-node 2 -o /nonexistent/x.sh -- hostname", "does not exist"),
    ("jobscript slurm --nodes 2 --ntasks-per-node 2 -o afile/x.sh -- hostname", "is a file"),
    ("jobscript slurm --nodes 2 --ntasks-per-node 2 --", "no program given"),
    ("notify --rank -3", "--rank"),
    ("notify --rank 1 --pid 999999999", "no running job"),
    ("notify --rank 1 --cluster doesnotexist", "no cluster 'doesnotexist'"),
    ("demo --grid torus:8", "2 or 3 dimensions"),
    ("demo --kill 99@3", "nodes 0..11"),
    ("demo --kill x@y", "invalid kill"),
    ("demo --method shrink", "cannot run"),
    ("demo --n 0", "--n"),
    ("demo --iterations -1", "--iterations"),
    ("demo --spares q:1", "bad spare layout"),
    ("demo --ranks-per-node 0", "--ranks-per-node"),
    ("demo --ranks-per-node 2 --block 2x2x1", "holds 4 ranks but a node runs 2"),
    ("demo --ranks-per-node 2 --block 2x1", "bad block '2x1'"),
    ("demo --ranks-per-node 2 --node-coords afile", "afile, line 1"),
    ("demo --node-coords /nonexistent/nodes.txt", "cannot read node coordinate file"),
    ("env --bogus", "unrecognized arguments"),
    ("build-mpi --jobs 0", "--jobs"),
    ("build-mpi4py --jobs 2", "unrecognized arguments"),
    ("faults --runs 0", "--runs"),
    ("faults --phases nope", "unknown phase"),
    ("faults --method shrink", "cannot run"),
    ("faults --grid torus:2x2x2x2", "2 or 3 dimensions"),
    ("faults --timeout 0", "--timeout"),
    ("faults --out /nonexistent/r.json", "does not exist"),
    ("faults --ranks-per-node 4 --block 3x1x1", "holds 3 ranks but a node runs 4"),
    ("faults --ranks-per-node 0", "--ranks-per-node"),
    ("validate --topology torus:3x3x3 --grid torus:4x4x4", "has only 27 hosts"),
    ("validate --topology fattree:4", "--grid"),
    ("validate --failures 10", "lower --failures"),
    ("validate --failures -1", "--failures"),
    ("validate --methods shrink", "leave it out"),
    ("validate --methods nope", "unknown method"),
    ("validate --methods simple,simple", "listed twice"),
    ("validate --rate 1bit", "out of range"),
    ("validate --rate fast", "rate 'fast'"),
    ("validate --delay soon", "delay"),
    ("validate --halo 0", "--halo"),
    ("validate --halo 1Q", "--halo"),
    ("validate --pattern allreduce", "not a halo exchange"),
    ("validate --iterations 0", "--iterations"),
    ("validate --topology torus:10x10x9", "GiB"),
    ("validate --topology dragonfly:2,1;2,1;1,1;1", "dragonfly"),
    ("validate --out afile", "is a file"),
    ("validate --out afile/sub", "cannot be created"),
    ("validate --name 'Bad Name'", "cluster name"),
    ("validate --ranks-per-node 2 --block 1x1x1", "holds 1 rank but a node runs 2"),
    ("validate --ranks-per-node 0", "--ranks-per-node"),
    ("frobnicate", "invalid choice"),
]


def namespaces() -> set[str]:
    result = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
    return {line.split()[0] for line in result.stdout.splitlines() if line.strip()}


@pytest.mark.parametrize("args,phrase", CASES, ids=[a for a, _ in CASES])
def test_bad_input_is_one_line(tmp_path, args, phrase):
    (tmp_path / "afile").write_text("not a folder\n")
    before = namespaces()
    result = subprocess.run([sys.executable, "-m", "ftslide", *shlex.split(args)], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0, result
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert phrase in lines[0], lines[0]
    assert [p.name for p in tmp_path.iterdir()] == ["afile"]
    assert namespaces() == before



@pytest.mark.parametrize("text,phrase", [
    ("0 0 0 0\n1 0 0 1\n2 0 0 1\n", "nodes.txt, line 3"),                   # two nodes at 0.0.1
    ("".join(f"{j}\n" for j in range(11)), "does not name node '11'"),    # node 11 missing
    ("0 0 0 0\n1 0 0 1\n1 0 1 0\n", "nodes.txt, line 3"),                   # node 1 named twice
    ("0 0 0 0\n1\n", "nodes.txt, line 2"),                                   # two forms mixed
    ("0 5 0 0\n", "nodes.txt, line 1"),                                      # outside the grid
    ("0 0 0 0 domain=a\n1 0 0 1\n", "nodes.txt, line 2"),                    # a domain on some lines only
])
def test_node_coordinate_file_is_checked_before_launch(tmp_path, text, phrase):
    """A coordinate file that names a node twice, misses one, mixes forms or leaves the grid: the
    runtime's own reader (sliding_nodes.h) refuses it before anything starts, in one line."""
    (tmp_path / "nodes.txt").write_text(text)
    result = subprocess.run([sys.executable, "-m", "ftslide", "demo", "--ranks-per-node", "2", "--node-coords",
                             "nodes.txt"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert phrase in lines[0] and "every node of the job once" in lines[0], lines[0]
    assert [p.name for p in tmp_path.iterdir()] == ["nodes.txt"]
