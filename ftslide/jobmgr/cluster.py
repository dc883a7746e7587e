"""An emulated multi-node cluster on one Linux machine: one network namespace per node.

Node K lives in namespace ``<name>-nK`` and has address 198.18.0.0 + K + 1 on its
``eth0``. Two kinds of layout:

* ``star``: a hub namespace ``<name>-hub`` holds a Linux bridge; every node's
  ``eth0`` is a veth whose peer ``nK`` is a bridge port. One subnet, no routing.
* ``ring`` and ``torus:AxB``: one veth pair per edge of the graph (``lJ`` in node I
  is the link to node J), ``eth0`` is a node-local veth holding the node's address
  (no prefix route), and every node forwards and has a static route to every other node
  along a shortest path of the graph (NetworkX, deterministic).

No address, route, sysctl or interface of the host's namespace is touched. An
optional rate limit puts a tbf qdisc on both ends of every link.

Every creation step is recorded in the state file
``cache_root()/cluster/<name>.json`` *before* it is done, so ``down`` removes what
a crashed or interrupted ``up`` left behind. ``up`` itself rolls back on failure.

MPI runs: PRRTE's ssh launcher starts its daemons through a generated launch
agent (``<agent> <host> <command>``) that runs the command inside the namespace
that owns the host address, with the node's own host name (a private UTS
namespace); ``mpirun`` itself runs in node 0. See ``docs/netcluster.md``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import signal
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..errors import FtslideError
from ..build.native import REPO
from ..build.mpi import MULTINODE_ULFM_OPTIONS
from ..build.ompi import cache_root

if TYPE_CHECKING:
    import networkx as nx

SUBNET = ipaddress.IPv4Network("198.18.0.0/15")
MAX_NODES = 1000
DEFAULT_NAME = "ftc"
TOPOLOGIES = ("star", "ring", "torus")
AGENT_TEMPLATE = REPO / "jobmgr-adapters" / "netcluster" / "agent.sh.in"
_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
_RATE = re.compile(r"^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps|tbps)$")
_RATE_BITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
              "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12}


@dataclass
class Cluster:
    """What ``up`` created (or was about to create) for one cluster; the state file holds it."""

    name: str
    nodes: int
    topology: str = "star"  # star, ring or torus:AxB
    rate: str | None = None
    slots: int = 2
    namespaces: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    complete: bool = False

    @property
    def hub(self) -> str:
        return f"{self.name}-hub"

    def namespace(self, node: int) -> str:
        return f"{self.name}-n{node}"

    @property
    def directory(self) -> Path:
        return cluster_dir() / self.name

    @property
    def hostfile(self) -> Path:
        return self.directory / "hostfile"

    @property
    def agent(self) -> Path:
        return self.directory / "agent"


def cluster_dir() -> Path:
    return cache_root() / "cluster"


def state_path(name: str) -> Path:
    return cluster_dir() / f"{name}.json"


def address(node: int) -> ipaddress.IPv4Address:
    """Node K's address: 198.18.0.0 + K + 1."""
    return SUBNET.network_address + node + 1


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise FtslideError(f"cluster name {name!r} is not valid: use 1-12 lower-case letters and digits, "
                           "starting with a letter")
    return name


def parse_topology(spec: str) -> tuple[str, tuple[int, ...]]:
    """``star``, ``ring`` or ``torus:AxB`` as (kind, dimensions); FtslideError otherwise."""
    kind, _, dims = spec.partition(":")
    if kind in ("star", "ring") and not dims:
        return kind, ()
    if kind == "torus":
        match = re.fullmatch(r"([1-9]\d*)x([1-9]\d*)", dims)
        if match:
            return kind, (int(match[1]), int(match[2]))
        raise FtslideError(f"topology {spec!r} is not valid: give the torus as torus:AxB, e.g. torus:2x3")
    raise FtslideError(f"unknown topology {spec!r}: use star, ring or torus:AxB")


def topology_graph(kind: str, dims: tuple[int, ...], nodes: int) -> "nx.Graph | None":
    """The link graph over node numbers 0..nodes-1 (None for a star); torus node (x, y) is x + A*y."""
    import networkx as nx

    if kind == "star":
        return None
    if kind == "ring":
        graph = nx.cycle_graph(nodes) if nodes >= 3 else nx.path_graph(nodes)
    else:
        a, b = dims
        if a * b != nodes:
            raise FtslideError(f"a torus:{a}x{b} has {a * b} nodes, not {nodes}: give --nodes {a * b}")
        grid = nx.grid_2d_graph(a, b, periodic=True)
        graph = nx.relabel_nodes(grid, {(x, y): x + a * y for x, y in grid.nodes})
    graph.add_nodes_from(range(nodes))
    graph.remove_edges_from(list(nx.selfloop_edges(graph)))
    return graph


def next_hops(graph: "nx.Graph", source: int) -> dict[int, int]:
    """For every other node, the neighbour of ``source`` on a shortest path to it (lowest-numbered paths)."""
    import networkx as nx

    ordered = nx.Graph()
    ordered.add_nodes_from(sorted(graph.nodes))
    ordered.add_edges_from(sorted(tuple(sorted(e)) for e in graph.edges))
    paths = nx.single_source_shortest_path(ordered, source)
    return {target: path[1] for target, path in sorted(paths.items()) if target != source}


def rate_bits(rate: str) -> float:
    """A tc rate such as 1gbit or 100mbit in bits per second; FtslideError if malformed."""
    match = _RATE.match(rate.strip().lower())
    if not match or float(match[1]) <= 0:
        raise FtslideError(f"rate {rate!r} is not valid: give a tc rate such as 1gbit, 100mbit or 500kbit")
    return float(match[1]) * _RATE_BITS[match[2]]


def tbf_arguments(rate: str) -> list[str]:
    """``tc qdisc`` tbf arguments: bucket of 10 ms at the rate (at least 16 KiB), queue of 50 ms."""
    burst = max(int(rate_bits(rate) / 8 / 100), 16384)
    return ["tbf", "rate", rate, "burst", str(burst), "latency", "50ms"]


# ---- shell helpers ---------------------------------------------------------------


def _ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", *(("-n", netns) if netns else ()), *args]
    return _cmd(cmd, check)


def _cmd(cmd: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise FtslideError(f"{cmd[0]} is not installed (apt-get install iproute2)") from None
    if check and result.returncode != 0:
        detail = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise FtslideError(f"'{' '.join(cmd)}' failed: {detail}")
    return result


def existing_namespaces() -> set[str]:
    out = _cmd(["ip", "netns", "list"]).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _require_root() -> None:
    if os.geteuid() != 0:
        raise FtslideError("creating network namespaces needs root: run ftslide cluster as root")


# ---- state -----------------------------------------------------------------------


def save(cluster: Cluster) -> None:
    """Write the state file atomically."""
    path = state_path(cluster.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(asdict(cluster), indent=1) + "\n")
    os.replace(partial, path)


def load(name: str) -> Cluster:
    """The cluster named ``name``; FtslideError if there is none."""
    check_name(name)
    path = state_path(name)
    try:
        data = json.loads(path.read_text())
        return Cluster(**data)
    except FileNotFoundError:
        raise FtslideError(f"there is no cluster {name!r}: create it with 'ftslide cluster up --name {name} "
                           "--nodes N'") from None
    except (OSError, ValueError, TypeError) as exc:
        raise FtslideError(f"the state file {path} is damaged ({exc}); remove the namespaces named "
                           f"'{name}-*' with 'ip netns del' and then the file") from None


def clusters() -> list[Cluster]:
    found = []
    for path in sorted(cluster_dir().glob("*.json")):
        try:
            found.append(load(path.stem))
        except FtslideError:
            continue
    return found


# ---- up / down -------------------------------------------------------------------


def up(name: str, nodes: int, topology: str = "star", rate: str | None = None, slots: int = 2) -> Cluster:
    """Create the cluster; on any failure remove what was created and raise FtslideError."""
    check_name(name)
    kind, dims = parse_topology(topology)
    if not 1 <= nodes <= MAX_NODES:
        raise FtslideError(f"--nodes must be between 1 and {MAX_NODES}, not {nodes}")
    graph = topology_graph(kind, dims, nodes)
    if slots < 1:
        raise FtslideError(f"--slots must be at least 1, not {slots}")
    tbf = tbf_arguments(rate) if rate else None
    _require_root()
    if state_path(name).exists():
        raise FtslideError(f"cluster {name!r} already exists: 'ftslide cluster down --name {name}' first, "
                           "or pick another --name")
    cluster = Cluster(name=name, nodes=nodes, topology=topology if kind != "star" else "star", rate=rate,
                      slots=slots)
    wanted = [*([cluster.hub] if graph is None else []), *(cluster.namespace(k) for k in range(nodes))]
    taken = sorted(set(wanted) & existing_namespaces())
    if taken:
        raise FtslideError(f"network namespace {taken[0]} already exists: pick another --name, or remove it "
                           f"with 'ip netns del {taken[0]}' if it is left over")
    try:
        if graph is None:
            _build_star(cluster, tbf)
        else:
            _build_routed(cluster, graph, tbf)
        _write_files(cluster)
        cluster.complete = True
        save(cluster)
    except BaseException as exc:
        try:
            teardown(cluster)
        except FtslideError:
            pass
        if isinstance(exc, FtslideError):
            raise FtslideError(f"cluster up failed and was rolled back: {exc}") from None
        raise
    return cluster


def _add_namespace(cluster: Cluster, netns: str) -> None:
    cluster.namespaces.append(netns)
    save(cluster)
    if _ip("netns", "add", netns, check=False).returncode != 0:
        cluster.namespaces.remove(netns)  # not ours: someone else made it in between
        save(cluster)
        raise FtslideError(f"network namespace {netns} could not be created (does it exist already?)")
    _ip("link", "set", "lo", "up", netns=netns)


def _build_star(cluster: Cluster, tbf: list[str] | None) -> None:
    save(cluster)
    _add_namespace(cluster, cluster.hub)
    _ip("link", "add", "br0", "type", "bridge", netns=cluster.hub)
    _ip("link", "set", "br0", "up", netns=cluster.hub)
    prefix = SUBNET.prefixlen
    for k in range(cluster.nodes):
        netns, port = cluster.namespace(k), f"n{k}"
        _add_namespace(cluster, netns)
        # Both ends are created inside their namespaces: nothing appears in the host's.
        _ip("link", "add", "eth0", "netns", netns, "type", "veth", "peer", "name", port,
            "netns", cluster.hub, netns=cluster.hub)
        _ip("link", "set", port, "master", "br0", netns=cluster.hub)
        _ip("link", "set", port, "up", netns=cluster.hub)
        _ip("addr", "add", f"{address(k)}/{prefix}", "dev", "eth0", netns=netns)
        _ip("link", "set", "eth0", "up", netns=netns)
        if tbf:
            _cmd(["ip", "netns", "exec", netns, "tc", "qdisc", "add", "dev", "eth0", "root", *tbf])
            _cmd(["ip", "netns", "exec", cluster.hub, "tc", "qdisc", "add", "dev", port, "root", *tbf])


def _build_routed(cluster: Cluster, graph: "nx.Graph", tbf: list[str] | None) -> None:
    """Point-to-point veths along the graph's edges, /32 node addresses, shortest-path static routes."""
    save(cluster)
    for k in range(cluster.nodes):
        netns = cluster.namespace(k)
        _add_namespace(cluster, netns)
        # Forwarding and loose reverse-path checks inside this namespace only.
        _cmd(["ip", "netns", "exec", netns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1",
              "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"])
        # The node's address sits on eth0, one end of a veth pair local to the node (a stand-in for a
        # dummy interface, whose kernel module containers often lack), so that it is up with a carrier.
        # eth0 is made second so that it gets the first index after lo: with the address on a later
        # interface PRRTE warns that no interface matches oob_tcp_if_include (though it finds it).
        _ip("link", "add", "eth0p", "type", "veth", "peer", "name", "eth0", netns=netns)
        # The /15 mask without its prefix route: the /32 routes below decide every path, and an
        # address that is no node's is unreachable instead of bouncing between eth0 and eth0p.
        _ip("addr", "add", f"{address(k)}/{SUBNET.prefixlen}", "dev", "eth0", "noprefixroute", netns=netns)
        _ip("link", "set", "eth0p", "up", netns=netns)
        _ip("link", "set", "eth0", "up", netns=netns)
    for i, j in sorted(tuple(sorted(e)) for e in graph.edges):
        _ip("link", "add", f"l{j}", "type", "veth", "peer", "name", f"l{i}", "netns", cluster.namespace(j),
            netns=cluster.namespace(i))
        for here, there in ((i, j), (j, i)):
            _ip("link", "set", f"l{there}", "up", netns=cluster.namespace(here))
            if tbf:
                _cmd(["ip", "netns", "exec", cluster.namespace(here), "tc", "qdisc", "add", "dev", f"l{there}",
                      "root", *tbf])
    for k in range(cluster.nodes):
        hops = next_hops(graph, k)
        # Neighbours first: the route to a neighbour is what makes it usable as a gateway.
        lines = [f"route add {address(t)}/32 dev l{t} src {address(k)}" for t, h in hops.items() if t == h]
        lines += [f"route add {address(t)}/32 via {address(h)} dev l{h} src {address(k)}"
                  for t, h in hops.items() if t != h]
        if lines:
            result = subprocess.run(["ip", "-n", cluster.namespace(k), "-batch", "-"], input="\n".join(lines) + "\n",
                                    capture_output=True, text=True, timeout=60)
            if result.returncode != 0:
                raise FtslideError(f"routes of node {k} could not be added: {result.stderr.strip()[:200]}")


def _write_files(cluster: Cluster) -> None:
    cluster.files.append(str(cluster.directory))
    save(cluster)
    cluster.directory.mkdir(parents=True, exist_ok=True)
    cluster.hostfile.write_text("".join(f"{address(k)} slots={cluster.slots}\n" for k in range(cluster.nodes)))
    cases = "".join(f"    {address(k)}|{cluster.namespace(k)}) ns={cluster.namespace(k)} ;;\n"
                    for k in range(cluster.nodes))
    try:
        template = AGENT_TEMPLATE.read_text()
    except OSError:
        raise FtslideError(f"the launch agent template {AGENT_TEMPLATE} is missing: restore it from git") from None
    cluster.agent.write_text(template.replace("@NAME@", cluster.name).replace("@CASES@", cases))
    cluster.agent.chmod(0o755)


def teardown(cluster: Cluster) -> list[str]:
    """Kill every process in the cluster's namespaces, delete them, remove its files and state file.

    Returns the namespaces deleted. Only what the state file records is touched.
    """
    present = existing_namespaces()
    removed = []
    for netns in reversed(cluster.namespaces):
        if netns in present:
            kill_namespace(netns)
            _ip("netns", "del", netns)
            removed.append(netns)
    remove_session_dirs([cluster.namespace(node) for node in range(cluster.nodes)])
    for name in cluster.files:
        path = Path(name)
        if path.is_dir():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()
        else:
            path.unlink(missing_ok=True)
    state_path(cluster.name).unlink(missing_ok=True)
    try:
        cluster_dir().rmdir()  # only when no other cluster is left
    except OSError:
        pass
    return removed


def remove_session_dirs(hosts: Sequence[str]) -> None:
    """Remove the PRRTE session directories (``prted.HOST.PID.N``, ``prterun.HOST...``) that daemons on the
    emulated nodes ``hosts`` left in the shared temporary folder: a daemon killed with its node cannot
    remove its own, and a real node would take them with it."""
    for host in hosts:
        for path in Path(tempfile.gettempdir()).glob(f"prte*.{host}.*"):
            shutil.rmtree(path, ignore_errors=True)


def down(name: str) -> list[str]:
    _require_root()
    return teardown(load(name))


# ---- processes -------------------------------------------------------------------


def namespace_pids(netns: str) -> list[int]:
    """Processes whose network namespace is ``netns`` (same inode as /run/netns/<netns>)."""
    try:
        target = os.stat(f"/run/netns/{netns}")
    except OSError:
        return []
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            st = os.stat(proc / "ns" / "net")
        except OSError:
            continue
        if (st.st_ino, st.st_dev) == (target.st_ino, target.st_dev) and int(proc.name) != os.getpid():
            pids.append(int(proc.name))
    return sorted(pids)


def kill_namespace(netns: str) -> int:
    """SIGKILL every process in ``netns``; return the count."""
    return kill_namespaces([netns])


def kill_namespaces(namespaces: Sequence[str]) -> int:
    """SIGKILL every process in ``namespaces`` at once: all are stopped first (so none can fork a new
    one or notice the others go), then all are killed; return the count."""
    killed: set[int] = set()
    for _ in range(20):
        pids = [pid for netns in namespaces for pid in namespace_pids(netns) if pid not in killed]
        if not pids:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        killed.update(pids)
        time.sleep(0.01)
    return len(killed)


def kill_nodes(name: str, nodes: Sequence[int]) -> int:
    """SIGKILL every process of each node in ``nodes`` at once; return how many were killed."""
    _require_root()
    cluster = load(name)
    for node in nodes:
        if not 0 <= node < cluster.nodes:
            raise FtslideError(f"cluster {name!r} has no node {node}: nodes are 0..{cluster.nodes - 1}")
    return kill_namespaces([cluster.namespace(node) for node in nodes])


# ---- MPI -------------------------------------------------------------------------


def mpirun_options(cluster: Cluster) -> list[str]:
    """mpirun options that run a job across ``cluster``: hostfile, launch agent, cluster network only."""
    subnet = str(SUBNET)
    return ["--hostfile", str(cluster.hostfile),
            "--prtemca", "plm_ssh_agent", str(cluster.agent),
            "--prtemca", "plm_ssh_no_tree_spawn", "1",
            "--prtemca", "oob_tcp_if_include", subnet,
            "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", subnet,
            *MULTINODE_ULFM_OPTIONS]


def launch_environment() -> dict[str, str]:
    """Environment for a cluster run: fill each node's slots in turn (mpirun's own default maps by
    core and would put every rank on node 0 of a small machine), oversubscribing when needed."""
    return {"PRTE_MCA_rmaps_default_mapping_policy": "slot:oversubscribe"}


def launch_argv(cluster: Cluster, mpirun: Sequence[str]) -> list[str]:
    """``mpirun`` argv wrapped to run in node 0's namespace with node 0's host name."""
    if not cluster.complete:
        raise FtslideError(f"cluster {cluster.name!r} is incomplete (an 'up' was interrupted): "
                           f"'ftslide cluster down --name {cluster.name}' and create it again")
    if cluster.namespace(0) not in existing_namespaces():
        raise FtslideError(f"network namespace {cluster.namespace(0)} of cluster {cluster.name!r} is gone: "
                           f"'ftslide cluster down --name {cluster.name}' and create it again")
    return [str(cluster.agent), str(address(0)), shlex.join(mpirun)]
