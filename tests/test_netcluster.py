"""The emulated cluster (ftslide cluster, ftslide run --cluster): real namespaces, veths, HTB, MPI.

Every test makes a cluster with a unique name (``t`` + 8 hex digits) and the ``cluster``
fixture removes it, and any namespace with its prefix, whatever the outcome. Traffic goes
only to cluster addresses (198.18.0.0/15) between the test's own namespaces.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from ftslide.jobmgr import cluster as netcluster
from ftslide.errors import FtslideError
from ftslide.toolchain.mpi import kill_processes
from ftslide.sliding.topology import Topology, parse_topology
from test_build import assert_one_line_error, ftslide

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
              pytest.mark.timeout(60)]

REPO = Path(__file__).resolve().parent.parent


def our_namespaces(name: str) -> list[str]:
    return sorted(ns for ns in netcluster.existing_namespaces() if ns.startswith(f"{name}-"))


def host_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    return {line.split(":")[1].strip() for line in out.splitlines()}


@pytest.fixture
def cluster() -> Iterator[str]:
    """A fresh cluster name; afterwards the cluster, its namespaces and files are gone."""
    name = f"t{uuid.uuid4().hex[:8]}"
    links = host_links()
    yield name
    try:
        netcluster.down(name)
    except FtslideError:
        pass
    for netns in our_namespaces(name):  # made by hand in a test, or left by a bug
        netcluster.kill_namespace(netns)
        subprocess.run(["ip", "netns", "del", netns], check=False)
    assert not our_namespaces(name)
    assert not netcluster.state_path(name).exists() and not (netcluster.cluster_dir() / name).exists()
    left = list(Path(tempfile.gettempdir()).glob(f"prte*.{name}-n*"))
    assert not left, f"PRRTE session directories of the cluster's nodes left: {left}"
    assert host_links() == links, "interfaces appeared in the host's namespace"


def up(name: str, *args: str) -> None:
    result = ftslide("cluster", "up", "--name", name, *args)
    assert result.returncode == 0, result.stderr


def in_node(name: str, node: int, *cmd: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", f"{name}-n{node}", *cmd], **kwargs)


SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5000)); s.listen(1); s.settimeout(20)
print("listening", flush=True)
c, peer = s.accept(); c.settimeout(20)
c.sendall(b"x" * int(sys.argv[2])); c.close()
print(peer[0], flush=True)
"""

CLIENT = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], 5000), timeout=20)
start, got = time.monotonic(), 0
while True:
    data = c.recv(65536)
    if not data:
        break
    got += len(data)
print(got, time.monotonic() - start)
"""


def transfer(name: str, server: int, client: int, size: int) -> tuple[str, int, float]:
    """TCP: node ``server`` sends ``size`` bytes to node ``client``; (peer seen by server, bytes, seconds)."""
    srv = in_node(name, server, sys.executable, "-c", SERVER, str(netcluster.address(server)), str(size),
                  stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None and srv.stdout.readline().strip() == "listening"
        got = subprocess.run(["ip", "netns", "exec", f"{name}-n{client}", sys.executable, "-c", CLIENT,
                              str(netcluster.address(server))], capture_output=True, text=True, timeout=30)
        assert got.returncode == 0, got.stderr
        peer = srv.communicate(timeout=30)[0].strip()
    finally:
        srv.kill()
        srv.wait()
    nbytes, seconds = got.stdout.split()
    return peer, int(nbytes), float(seconds)


def test_up_and_down_leave_nothing(cluster):
    links = host_links()
    up(cluster, "--nodes", "3")
    assert our_namespaces(cluster) == [f"{cluster}-hub", f"{cluster}-n0", f"{cluster}-n1", f"{cluster}-n2"]
    for k in range(3):
        addr = subprocess.run(["ip", "-n", f"{cluster}-n{k}", "-o", "-4", "addr", "show", "eth0"],
                              capture_output=True, text=True, check=True).stdout
        assert f"inet 198.18.0.{k + 1}/15" in addr
    state = netcluster.load(cluster)
    assert state.complete and state.hostfile.read_text().split() == [
        "198.18.0.1", "slots=2", "198.18.0.2", "slots=2", "198.18.0.3", "slots=2"]
    assert os.access(state.agent, os.X_OK)
    assert host_links() == links
    status = ftslide("cluster", "status", "--name", cluster).stdout
    assert re.search(rf"2\s+{cluster}-n2\s+198\.18\.0\.3\s+up", status), status
    down = ftslide("cluster", "down", "--name", cluster)
    assert down.returncode == 0 and "removed 4 namespace(s)" in down.stdout, down.stderr
    assert not our_namespaces(cluster) and not netcluster.state_path(cluster).exists()
    assert not state.directory.exists()


def test_nodes_reach_each_other_over_the_cluster_network(cluster):
    """TCP from node 0 to node 2 through the hub's bridge; node 2 sees node 0's cluster address."""
    up(cluster, "--nodes", "3")
    peer, nbytes, _ = transfer(cluster, server=2, client=0, size=1000)
    assert (peer, nbytes) == ("198.18.0.1", 1000)


def link_classes(netns: str, dev: str) -> str:
    return subprocess.run(["ip", "netns", "exec", netns, "tc", "class", "show", "dev", dev],
                          capture_output=True, text=True, check=True).stdout


def test_rate_limit_shapes_both_ends(cluster):
    up(cluster, "--nodes", "2", "--rate", "20mbit")
    for netns, dev in ((f"{cluster}-n0", "eth0"), (f"{cluster}-n1", "eth0"),
                       (f"{cluster}-hub", "n0"), (f"{cluster}-hub", "n1")):
        shown = link_classes(netns, dev)
        assert re.search(r"class htb 1:1 root rate 20Mbit ceil 20Mbit", shown), (netns, dev, shown)
        assert re.search(r"class htb 1:10 parent 1:1 prio 0 rate 2Mbit ceil 20Mbit", shown), shown
        filters = subprocess.run(["ip", "netns", "exec", netns, "tc", "filter", "show", "dev", dev],
                                 capture_output=True, text=True, check=True).stdout
        assert "flowid 1:10" in filters and "match 00000000/0000ff80 at 0" in filters, filters
        details = subprocess.run(["ip", "-n", netns, "-d", "link", "show", dev], capture_output=True, text=True,
                                 check=True).stdout
        assert "gso_max_segs 1 " in details, details  # one segment per packet: the shaping is smooth
    for node in (0, 1):
        tso = subprocess.run(["ip", "netns", "exec", f"{cluster}-n{node}", "sysctl", "-n",
                              "net.ipv4.tcp_limit_output_bytes", "net.ipv4.tcp_slow_start_after_idle"],
                             capture_output=True, text=True, check=True).stdout.split()
        assert tso == ["3000", "0"], tso
    # 1 MB at 20 Mbit/s takes 0.4 s: the limit is really applied.
    _, nbytes, seconds = transfer(cluster, server=1, client=0, size=1_000_000)
    assert nbytes == 1_000_000 and seconds > 0.3, seconds


def test_ring_routes_through_the_neighbours(cluster):
    """ring of 4: node 0 has links to 1 and 3 only, reaches 2 through 1, shaped on both link ends."""
    up(cluster, "--nodes", "4", "--topology", "ring", "--rate", "200mbit")
    links = subprocess.run(["ip", "-n", f"{cluster}-n0", "-o", "link", "show"], capture_output=True, text=True,
                           check=True).stdout
    assert sorted(re.findall(r"^\d+: (l\d+)@", links, re.M)) == ["l1", "l3"], links
    route = subprocess.run(["ip", "-n", f"{cluster}-n0", "route", "get", "198.18.0.3"], capture_output=True,
                           text=True, check=True).stdout
    assert "via 198.18.0.2 dev l1 src 198.18.0.1" in route, route
    for node, dev in ((0, "l1"), (1, "l0"), (2, "l3"), (3, "l0")):
        shown = link_classes(f"{cluster}-n{node}", dev)
        assert "root rate 200Mbit" in shown, (node, dev, shown)
    peer, nbytes, _ = transfer(cluster, server=2, client=0, size=100_000)
    assert (peer, nbytes) == ("198.18.0.1", 100_000)


@pytest.mark.mpi
def test_mpi_job_on_a_torus(cluster, mpi_program):
    """torus:2x2 with one slot per node: the revoke program's 4 ranks run in 4 namespaces, routed."""
    up(cluster, "--nodes", "4", "--topology", "torus:2x2", "--slots", "1")
    route = subprocess.run(["ip", "-n", f"{cluster}-n0", "route", "get", "198.18.0.4"], capture_output=True,
                           text=True, check=True).stdout
    assert "via 198.18.0.3 dev l2" in route, route  # (0,0) -> (1,1) through (1,0), host 2
    revoke = mpi_program("conformance/revoke.c")
    where = 'echo "where rank=$OMPI_COMM_WORLD_RANK ino=$(stat -L -c %i /proc/self/ns/net)"'
    result = ftslide("run", "--cluster", cluster, "-np", "4", "sh", "-c", f'{where}; exec "$0"', str(revoke),
                     timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("is_revoked=1") == 4 and result.stdout.count("finished=1") == 4, result.stdout
    assert "WARNING" not in result.stderr, result.stderr
    seen = {int(m[1]): int(m[2]) for m in re.finditer(r"where rank=(\d) ino=(\d+)", result.stdout)}
    assert seen == {k: os.stat(f"/run/netns/{cluster}-n{k}").st_ino for k in range(4)}, result.stdout


def forwarding_paths(name: str, topo: Topology) -> dict[tuple[int, int], list[int]]:
    """The vertices a packet from node a to node b passes through, read off every namespace's kernel
    forwarding table (``ip route get``), for every ordered pair of nodes."""
    hop: dict[tuple[int, int], int] = {}
    for vertex in range(topo.vertices):
        netns = f"{name}-n{vertex}" if vertex < topo.hosts else f"{name}-s{vertex - topo.hosts}"
        targets = [t for t in range(topo.hosts) if t != vertex]
        result = subprocess.run(["ip", "-n", netns, "-batch", "-"], capture_output=True, text=True, check=True,
                                input="".join(f"route get {netcluster.address(t)}\n" for t in targets))
        devices = re.findall(r"^198\.18\.\S+ (?:via \S+ )?dev l(\d+) ", result.stdout, re.M)
        assert len(devices) == len(targets), result.stdout
        hop.update({(vertex, t): int(d) for t, d in zip(targets, devices)})
    paths = {}
    for a in range(topo.hosts):
        for b in range(topo.hosts):
            if a != b:
                path, at = [], a
                while at != b and len(path) <= topo.route_max:
                    at = hop[(at, b)]
                    path.append(at)
                paths[(a, b)] = path
    return paths


@pytest.mark.parametrize("spec,order", [("torus:3x3x2", ""), ("torus:4x2x2", "zyx"), ("mesh:3x3x2", ""),
                                        ("fattree:4", ""), ("kary:2,3", "")])
def test_forwarding_follows_the_model_routes(cluster, spec, order):
    """Every node's packets to every other node cross exactly the vertices of the topology model's route
    (the route of ftslide map and of SimGrid's platform): 3D tori in two routing orders, a mesh, fat-trees
    with their switches as namespaces. A TCP transfer over a longest route works."""
    up(cluster, "--topology", spec, *(["--route-order", order] if order else []))
    topo = parse_topology(spec, order)
    paths = forwarding_paths(cluster, topo)
    for (a, b), path in paths.items():
        assert path == [topo.link(n).head for n in topo.route(a, b)], (a, b)
    a, b = max(paths, key=lambda pair: len(paths[pair]))
    peer, nbytes, _ = transfer(cluster, server=b, client=a, size=200_000)
    assert (peer, nbytes) == (str(netcluster.address(a)), 200_000)


def test_failed_up_rolls_back(cluster, monkeypatch):
    """A failure after the namespaces and links exist (no launch agent template) removes all of them."""
    monkeypatch.setattr(netcluster, "AGENT_TEMPLATE", Path("/nonexistent/agent.sh.in"))
    for topology in ("star", "ring", "torus:2x2", "star:4", "kary:2,2"):
        with pytest.raises(FtslideError, match="rolled back.*agent template"):
            netcluster.up(cluster, 4, topology)
        assert not our_namespaces(cluster) and not netcluster.state_path(cluster).exists()


def test_name_collision_is_refused_and_leaves_the_other_namespace(cluster):
    subprocess.run(["ip", "netns", "add", f"{cluster}-n1"], check=True)
    assert_one_line_error(ftslide("cluster", "up", "--name", cluster, "--nodes", "3"),
                          f"{cluster}-n1 already exists")
    assert our_namespaces(cluster) == [f"{cluster}-n1"]  # ours gone, the other one untouched
    assert not netcluster.state_path(cluster).exists()


def test_down_after_a_crashed_up(cluster):
    """A state file recorded before each step lets down remove a half-made cluster."""
    crashed = netcluster.Cluster(name=cluster, nodes=3, namespaces=[f"{cluster}-hub", f"{cluster}-n0"])
    netcluster.save(crashed)
    subprocess.run(["ip", "netns", "add", f"{cluster}-hub"], check=True)  # n0 was not made yet
    assert "NO (run down)" in ftslide("cluster", "status").stdout
    assert_one_line_error(ftslide("run", "--cluster", cluster, "-np", "1", "/bin/true"), "incomplete")
    result = ftslide("cluster", "down", "--name", cluster)
    assert result.returncode == 0 and "removed 1 namespace(s)" in result.stdout, result.stderr
    assert not our_namespaces(cluster) and not netcluster.state_path(cluster).exists()


@pytest.mark.mpi
def test_mpi_job_across_two_nodes(cluster, mpi_program):
    """2 nodes x 2 ranks of the revoke conformance program over TCP; ranks 0,1 in n0 and 2,3 in n1. Across nodes
    coll/ftera's automatic tree is the binomial one at every rank (on one node it is the 4-nomial one)."""
    up(cluster, "--nodes", "2", "--slots", "2")
    revoke = mpi_program("conformance/revoke.c")
    where = 'echo "where rank=$OMPI_COMM_WORLD_RANK host=$(hostname) ino=$(stat -L -c %i /proc/self/ns/net)"'
    result = ftslide("run", "--cluster", cluster, "--mca", "coll_ftera_verbose", "10", "-np", "4", "sh", "-c",
                     f'{where}; exec "$0"', str(revoke), timeout=60)
    assert result.returncode == 0, result.stderr
    assert len(re.findall(r"coll:ftera: comm 0: 4 members, binomial tree", result.stderr)) == 4, result.stderr
    assert result.stdout.count("is_revoked=1") == 4 and result.stdout.count("finished=1") == 4, result.stdout
    ino = {k: os.stat(f"/run/netns/{cluster}-n{k}").st_ino for k in range(2)}
    seen = {int(m[1]): (m[2], int(m[3])) for m in re.finditer(r"where rank=(\d) host=(\S+) ino=(\d+)", result.stdout)}
    assert seen == {0: (f"{cluster}-n0", ino[0]), 1: (f"{cluster}-n0", ino[0]),
                    2: (f"{cluster}-n1", ino[1]), 3: (f"{cluster}-n1", ino[1])}, result.stdout
    assert not netcluster.namespace_pids(f"{cluster}-n0") and not netcluster.namespace_pids(f"{cluster}-n1")


def test_kill_node_kills_exactly_that_node(cluster):
    up(cluster, "--nodes", "3")
    victims = [in_node(cluster, 1, "sleep", "50"), in_node(cluster, 1, "sh", "-c", "sleep 50 & sleep 50; exit 0")]
    others = [in_node(cluster, 0, "sleep", "50"), in_node(cluster, 2, "sleep", "50")]
    try:
        deadline = time.monotonic() + 10
        while len(netcluster.namespace_pids(f"{cluster}-n1")) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        result = ftslide("cluster", "kill-node", "1", "--name", cluster)
        assert result.returncode == 0 and "killed 4 process(es)" in result.stdout, result
        for proc in victims:
            assert proc.wait(timeout=10) == -9
        assert not netcluster.namespace_pids(f"{cluster}-n1")
        assert all(proc.poll() is None for proc in others)
    finally:
        for proc in victims + others:
            proc.kill()
            proc.wait()


@pytest.mark.mpi
def test_kill_node_during_an_mpi_job(cluster):
    """Killing node 1 under a running job: its daemon and ranks die at once; the job (recoverable,
    as every 'ftslide run') goes on without them (PRRTE patches prrte/01-05) and the ranks of node 0 finish."""
    up(cluster, "--nodes", "2")
    name, value = "FTSLIDE_RUN_ID", uuid.uuid4().hex
    job = subprocess.Popen([sys.executable, "-m", "ftslide", "run", "--cluster", cluster, "-np", "4",
                            "sh", "-c", "sleep 4; echo finished rank=$OMPI_COMM_WORLD_RANK"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, name: value}, cwd=REPO, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # prted + 2 ranks on node 1
            if sum(Path(f"/proc/{pid}/comm").read_text().strip() == "sleep"
                   for pid in netcluster.namespace_pids(f"{cluster}-n1") if Path(f"/proc/{pid}").exists()) == 2:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the job's ranks did not start on node 1")
        result = ftslide("cluster", "kill-node", "1", "--name", cluster)
        assert result.returncode == 0, result.stderr
        assert not netcluster.namespace_pids(f"{cluster}-n1")
        out, err = job.communicate(timeout=30)
        assert job.returncode == 0, err
        assert "lost daemon" in err and "lost communication with a remote daemon" not in err, err
        assert sorted(out.split()) == ["finished", "finished", "rank=0", "rank=1"], out
    finally:
        kill_processes(job.pid, f"{name}={value}")
        job.wait()


def test_bad_inputs_are_one_line_errors(cluster):
    for args, phrase in [(["--nodes", "0"], "between 1 and"), (["--nodes", "-2"], "between 1 and"),
                         (["--nodes", "3", "--topology", "torus:2x2"], "has 4 nodes, not 3"),
                         (["--nodes", "4", "--topology", "torus:2x"], "not valid"),
                         (["--nodes", "4", "--topology", "torus:0x4"], "not valid"),
                         (["--nodes", "2", "--topology", "mesh"], "not valid"),
                         (["--topology", "ring"], "give the node count"),
                         (["--topology", "dragonfly:3,1;2,1;3,1;2"], "not dragonfly"),
                         (["--topology", "fattree:2;4,4;1,2;1,2"], "parallel links"),
                         (["--topology", "torus:11x10x10"], "needs 1100 namespaces"),
                         (["--topology", "torus:2x2", "--route-order", "zy"], "bad routing order"),
                         (["--nodes", "2", "--delay", "soon"], "bad delay"),
                         (["--nodes", "2", "--rate", "fast"], "bad rate"),
                         (["--nodes", "2", "--slots", "0"], "--slots")]:
        assert_one_line_error(ftslide("cluster", "up", "--name", cluster, *args), phrase)
        assert not our_namespaces(cluster) and not netcluster.state_path(cluster).exists()
    assert_one_line_error(ftslide("cluster", "up", "--name", "Bad_Name", "--nodes", "2"), "not valid")
    assert_one_line_error(ftslide("cluster", "kill-node", "0", "--name", cluster), "no cluster")
    assert_one_line_error(ftslide("cluster", "down", "--name", cluster), "no cluster")
    assert_one_line_error(ftslide("run", "--cluster", cluster, "-np", "2", "/bin/true"), "no cluster")
    assert_one_line_error(ftslide("run", "--cluster"), "needs a cluster name")
    up(cluster, "--nodes", "2")
    assert_one_line_error(ftslide("cluster", "up", "--name", cluster, "--nodes", "2"), "already exists")
    assert_one_line_error(ftslide("cluster", "kill-node", "2", "--name", cluster), "no node 2")
    assert_one_line_error(ftslide("cluster", "kill-node", "-1", "--name", cluster), "no node -1")
    assert_one_line_error(ftslide("cluster"), "give an action")
    assert len(our_namespaces(cluster)) == 3
