"""An emulated multi-node cluster on one Linux machine: one network namespace per node.

The layout is a topology of the one grammar (``ftslide.sliding.topology``): node K is
host K of the topology, lives in namespace ``<name>-nK`` and has address
198.18.0.0 + K + 1 on its ``eth0``. Two ways to build it:

* ``star:N`` (or ``star`` with ``--nodes N``): a hub namespace ``<name>-hub`` holds a
  Linux bridge, the star's one switch; every node's ``eth0`` is a veth whose peer
  ``nK`` is a bridge port. One subnet, no routing.
* every other topology (``ring:N``, ``torus:AxB[xC]``, ``mesh:AxB[xC]``, ``fattree:K``,
  ``fattree:...`` and ``kary:K,N`` without parallel links): switch J is namespace
  ``<name>-sJ`` (vertex hosts + J, address 198.18.0.0 + vertex + 1); one veth pair per
  pair of neighbouring vertices (``lJ`` in vertex I is the link to vertex J); ``eth0``
  is a vertex-local veth holding its address (no prefix route); and every vertex
  forwards, with a static route to every node along the topology model's route from
  that vertex (``Topology.route_from``: dimension order in the routing order on a
  torus or mesh, up/down d-mod-k on a fat-tree), so that every packet crosses exactly
  the links SimGrid and the mapping metrics route it over.

No address, route, sysctl or interface of the host's namespace is touched. An
optional rate limit (HTB) and delay (netem) apply to both ends of every link
(``shaping_commands``); with them, shaped devices send one segment per packet and the nodes'
TCP keeps short queues (``TCP_SYSCTLS``), so that a link's rate is what a transfer sees.

Every creation step is recorded in the state file
``cache_root()/cluster/<name>.json`` *before* it is done, so ``down`` removes what
a crashed or interrupted ``up`` left behind. ``up`` itself rolls back on failure.

MPI runs: PRRTE's ssh launcher starts its daemons through a generated launch
agent (``<agent> <host> <command>``) that runs the command inside the namespace
that owns the host address, with the node's own host name (a private UTS
namespace); ``mpirun`` itself runs in node 0. See ``docs/netcluster.md``.

Errors and cost: every function raises FtslideError (one line) for bad input or a failed system
call, and nothing else. Pure ones (names, addresses, ``neighbour_pairs``, ``next_hops``,
``shaping_commands``, the argv builders) cost O(nodes) or less; those that run ``ip``/``tc``
(``up``, ``teardown``, ``down``, ``kill_*``) cost about one process per namespace and link, seconds
for tens of nodes, and need root.
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
from typing import Sequence

from ..toolchain.mpi import MULTINODE_ULFM_OPTIONS
from ..toolchain.native import REPO
from ..toolchain.ompi import cache_root
from ..errors import FtslideError
from ..units import parse_rate, parse_time
from ..ui.output import write_text
from ..sliding.topology import Topology, TopologyError, parse_topology

__all__ = ["SUBNET", "DEFAULT_NAME", "AGENT_TEMPLATE", "Cluster", "cluster_dir", "state_path", "address",
           "check_name", "cluster_topology", "neighbour_pairs", "next_hops", "shaping_commands",
           "existing_namespaces", "save", "load", "clusters", "up", "teardown", "remove_session_dirs", "down",
           "namespace_pids", "kill_namespace", "kill_namespaces", "kill_nodes", "mpirun_options",
           "launch_environment", "job_argv", "launch_argv"]

SUBNET = ipaddress.IPv4Network("198.18.0.0/15")
MAX_NODES = 1000        # namespaces of one cluster, switches included
DEFAULT_NAME = "ftc"
AGENT_TEMPLATE = REPO / "jobmgr-adapters" / "netcluster" / "agent.sh.in"
_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")


@dataclass
class Cluster:
    """What ``up`` created (or was about to create) for one cluster; the state file holds it."""

    name: str
    nodes: int
    topology: str = "star"  # a spec of the topology grammar; "star" alone is star:<nodes>
    rate: str | None = None
    slots: int = 2
    delay: str | None = None
    route_order: str = ""
    namespaces: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    complete: bool = False

    @property
    def hub(self) -> str:
        return f"{self.name}-hub"

    def namespace(self, node: int) -> str:
        return f"{self.name}-n{node}"

    def vertex_namespace(self, vertex: int) -> str:
        """Namespace of a vertex of the topology: node (host) or switch."""
        return self.namespace(vertex) if vertex < self.nodes else f"{self.name}-s{vertex - self.nodes}"

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
    """Folder of the clusters' state files and generated files (in the cache)."""
    return cache_root() / "cluster"


def state_path(name: str) -> Path:
    """The state file of cluster ``name``. Cost O(1); no check that it exists."""
    return cluster_dir() / f"{name}.json"


def address(vertex: int) -> ipaddress.IPv4Address:
    """Node (or switch vertex) K's address: 198.18.0.0 + K + 1."""
    return SUBNET.network_address + vertex + 1


def check_name(name: str) -> str:
    """``name`` if it can name a cluster (1-12 lower-case letters and digits, a letter first, so
    that every namespace name stays short); FtslideError otherwise."""
    if not _NAME.match(name):
        raise FtslideError(f"cluster name {name!r} is not valid: use 1-12 lower-case letters and digits, "
                           "starting with a letter")
    return name


def cluster_topology(spec: str, nodes: int | None = None, order: str = "") -> Topology:
    """The topology of a cluster: a spec of the one grammar; ``star`` and ``ring`` alone take
    their size from ``nodes``. FtslideError (one line) if malformed or not buildable here."""
    spec = spec.strip()
    if spec in ("star", "ring"):
        if nodes is None:
            raise FtslideError(f"give the node count of the {spec}: --nodes N, or --topology {spec}:N")
        spec = f"{spec}:{nodes}"
    try:
        topo = parse_topology(spec, order)
    except TopologyError as exc:
        if str(exc).startswith("bad topology"):
            raise FtslideError(f"topology {spec!r} is not valid: {str(exc).split(': ', 1)[-1]}") from None
        raise
    if nodes is not None and nodes != topo.hosts:
        raise FtslideError(f"a {topo} has {topo.hosts} nodes, not {nodes}: give --nodes {topo.hosts} "
                           f"or leave --nodes out")
    if topo.kind == "dragonfly":
        raise FtslideError(f"the emulated cluster builds star, ring, torus, mesh and fat-tree topologies, "
                           f"not {topo.kind}")
    if topo.kind == "fattree" and any(n > 1 for n in topo._c.count[: topo._c.levels]):
        raise FtslideError(f"{topo} has parallel links between switches, which routes by destination "
                           f"cannot follow: use one link per pair (fattree:K, kary:K,N)")
    if not 1 <= topo.vertices <= MAX_NODES:
        raise FtslideError(f"{topo} needs {topo.vertices} namespaces (nodes and switches); the emulated "
                           f"cluster has 1 to {MAX_NODES}")
    return topo


def neighbour_pairs(topo: Topology) -> list[tuple[int, int]]:
    """Pairs of neighbouring vertices (lower first), one veth pair each, in order."""
    return sorted({(min(link.tail, link.head), max(link.tail, link.head)) for link in topo.all_links()})


def next_hops(topo: Topology, vertex: int) -> dict[int, int]:
    """For every node (host) other than ``vertex``, the neighbour its route leaves through."""
    hops = {}
    for host in range(topo.hosts):
        if host != vertex:
            first = topo.route_from(vertex, host)[0]
            link = topo.link(first)
            assert link is not None
            hops[host] = link.head
    return hops


def _netem_delay(delay: str) -> str:
    """netem's delay argument for a duration of ``ftslide.units`` (1ms, 200us ...); FtslideError if
    malformed."""
    return f"{parse_time(delay, 'delay') * 1e6:.3f}".rstrip("0").rstrip(".") + "us"


RATE_MIN, RATE_MAX = 8e3, 1e11   # bits/s that the link shaping takes (HTB counts in bytes/s, 64 bits)


def shaping_commands(rate: str | None, delay: str | None) -> list[list[str]]:
    """``tc`` argument lists shaping one end of a link (``DEV`` stands for the device).

    A rate is an HTB tree: one class at the rate, with two leaves that borrow from each other,
    small packets (IP length below 128 bytes: TCP acknowledgements, SYNs) served first, so that
    the acknowledgements of one direction never wait behind the other direction's data (an
    exchange over a single FIFO halves TCP's throughput), and the data in a FIFO of the device's
    queue length (1000 packets), deep enough that a halo is queued rather than dropped. Without a
    rate, a delay is a netem root; with one, netem is each leaf's queue.
    """
    if rate is None:
        if delay is None:
            return []
        return [["qdisc", "add", "dev", "DEV", "root", "netem", "delay", _netem_delay(delay), "limit", "100000"]]
    bits = parse_rate(rate, "rate") * 8
    if not RATE_MIN <= bits <= RATE_MAX:
        raise FtslideError(f"rate {rate!r} is out of range: links take 8kbit to 100gbit")
    whole, small = f"{int(bits)}bit", f"{int(bits / 10)}bit"
    cmds = [["qdisc", "add", "dev", "DEV", "root", "handle", "1:", "htb", "default", "20"],
            ["class", "add", "dev", "DEV", "parent", "1:", "classid", "1:1", "htb", "rate", whole, "ceil", whole],
            ["class", "add", "dev", "DEV", "parent", "1:1", "classid", "1:10", "htb", "rate", small, "ceil", whole,
             "prio", "0", "quantum", "1514"],
            ["class", "add", "dev", "DEV", "parent", "1:1", "classid", "1:20", "htb", "rate",
             f"{int(bits) - int(bits / 10)}bit", "ceil", whole, "prio", "1", "quantum", "1514"],
            ["filter", "add", "dev", "DEV", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
             "match", "u16", "0x0000", "0xff80", "at", "2", "flowid", "1:10"]]
    if delay is not None:
        cmds += [["qdisc", "add", "dev", "DEV", "parent", f"1:{leaf}", "netem", "delay", _netem_delay(delay),
                  "limit", "100000"] for leaf in (10, 20)]
    return cmds


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
    """Names of the network namespaces of this machine (``ip netns list``); FtslideError if ``ip``
    fails. Cost: one process."""
    out = _cmd(["ip", "netns", "list"]).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _require_netem(name: str) -> None:
    """FtslideError unless this kernel has the netem qdisc (tried on the loopback of a namespace made
    for the purpose and removed at once)."""
    probe = f"{name}-probe"
    if _ip("netns", "add", probe, check=False).returncode != 0:
        raise FtslideError(f"network namespace {probe} could not be created to check for netem")
    try:
        tried = _cmd(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                      "delay", "1ms"], check=False)
    finally:
        _ip("netns", "del", probe, check=False)
    if tried.returncode != 0:
        raise FtslideError("this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM), so --delay cannot be "
                           "applied: leave it out (links keep the namespaces' own latency)")


def _require_root() -> None:
    if os.geteuid() != 0:
        raise FtslideError("creating network namespaces needs root: run ftslide cluster as root")


# ---- state -----------------------------------------------------------------------


def save(cluster: Cluster) -> None:
    """Write the state file atomically."""
    path = state_path(cluster.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(asdict(cluster), indent=1) + "\n")


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
    """Every cluster with a readable state file, by name; unreadable ones are left out."""
    found = []
    for path in sorted(cluster_dir().glob("*.json")):
        try:
            found.append(load(path.stem))
        except FtslideError:
            continue
    return found


# ---- up / down -------------------------------------------------------------------


def up(name: str, nodes: int | None = None, topology: str = "star", rate: str | None = None,
       slots: int = 2, delay: str | None = None, route_order: str = "") -> Cluster:
    """Create the cluster; on any failure remove what was created and raise FtslideError."""
    check_name(name)
    if nodes is not None and not 1 <= nodes <= MAX_NODES:
        raise FtslideError(f"--nodes must be between 1 and {MAX_NODES}, not {nodes}")
    topo = cluster_topology(topology, nodes, route_order)
    if slots < 1:
        raise FtslideError(f"--slots must be at least 1, not {slots}")
    shaping = shaping_commands(rate, delay)
    _require_root()
    if delay is not None:
        _require_netem(name)
    if state_path(name).exists():
        raise FtslideError(f"cluster {name!r} already exists: 'ftslide cluster down --name {name}' first, "
                           "or pick another --name")
    star = topo.kind == "star"
    cluster = Cluster(name=name, nodes=topo.hosts, topology=str(topo), rate=rate, slots=slots, delay=delay,
                      route_order=topo.order)
    wanted = [*([cluster.hub] if star else []),
              *(cluster.vertex_namespace(v) for v in range(topo.hosts if star else topo.vertices))]
    taken = sorted(set(wanted) & existing_namespaces())
    if taken:
        raise FtslideError(f"network namespace {taken[0]} already exists: pick another --name, or remove it "
                           f"with 'ip netns del {taken[0]}' if it is left over")
    try:
        if star:
            _build_star(cluster, shaping)
        else:
            _build_routed(cluster, topo, shaping)
        if shaping:
            _tune_tcp(cluster)
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


def _shape(netns: str, dev: str, shaping: list[list[str]]) -> None:
    """Shape device ``dev`` of ``netns`` (``shaping_commands``).

    A shaped device also sends no GSO packets bigger than one segment: a qdisc passes a whole
    (up to 64 KiB) GSO packet when its bucket is positive and charges it afterwards, so that a
    64 KiB halo at 1 Mbit/s would leave in a few bursts and finish in 0.35 s instead of 0.55 s."""
    if shaping:
        _ip("link", "set", "dev", dev, "gso_max_segs", "1", netns=netns)
    for args in shaping:
        _cmd(["ip", "netns", "exec", netns, "tc", *(dev if a == "DEV" else a for a in args)])


# TCP settings of every node's namespace on a shaped cluster. TCP small queues: a socket keeps at
# most two segments in the qdisc, the rest in its own buffer. Open MPI's TCP BTL carries both
# directions of a halo exchange over one connection, so the acknowledgements of one direction ride
# on the other direction's data; with a socket's whole send buffer in the link's queue they wait
# seconds behind it and the sender stalls (a 64 KiB exchange at 1 Mbit/s took 1.4-1.7x the
# link's time); with two segments queued, the stack sends pure acknowledgements, which the
# shaping serves first. And no slow start again after an idle spell between exchanges.
TCP_SYSCTLS = ("net.ipv4.tcp_limit_output_bytes=3000", "net.ipv4.tcp_slow_start_after_idle=0")


def _tune_tcp(cluster: Cluster) -> None:
    for k in range(cluster.nodes):
        _cmd(["ip", "netns", "exec", cluster.namespace(k), "sysctl", "-q", "-w", *TCP_SYSCTLS])


def _build_star(cluster: Cluster, shaping: list[list[str]]) -> None:
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
        _shape(netns, "eth0", shaping)
        _shape(cluster.hub, port, shaping)


def _build_routed(cluster: Cluster, topo: Topology, shaping: list[list[str]]) -> None:
    """Point-to-point veths between neighbouring vertices, /32 addresses, and in every vertex a static
    route to every node along the topology model's route from that vertex."""
    save(cluster)
    for v in range(topo.vertices):
        netns = cluster.vertex_namespace(v)
        _add_namespace(cluster, netns)
        # Forwarding and loose reverse-path checks inside this namespace only.
        _cmd(["ip", "netns", "exec", netns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1",
              "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"])
        # The vertex's address sits on eth0, one end of a veth pair local to it (a stand-in for a
        # dummy interface, whose kernel module containers often lack), so that it is up with a carrier.
        # eth0 is made second so that it gets the first index after lo: with the address on a later
        # interface PRRTE warns that no interface matches oob_tcp_if_include (though it finds it).
        _ip("link", "add", "eth0p", "type", "veth", "peer", "name", "eth0", netns=netns)
        # The /15 mask without its prefix route: the /32 routes below decide every path, and an
        # address that is no vertex's is unreachable instead of bouncing between eth0 and eth0p.
        _ip("addr", "add", f"{address(v)}/{SUBNET.prefixlen}", "dev", "eth0", "noprefixroute", netns=netns)
        _ip("link", "set", "eth0p", "up", netns=netns)
        _ip("link", "set", "eth0", "up", netns=netns)
    neighbours: dict[int, list[int]] = {v: [] for v in range(topo.vertices)}
    for i, j in neighbour_pairs(topo):
        _ip("link", "add", f"l{j}", "type", "veth", "peer", "name", f"l{i}", "netns",
            cluster.vertex_namespace(j), netns=cluster.vertex_namespace(i))
        for here, there in ((i, j), (j, i)):
            _ip("link", "set", f"l{there}", "up", netns=cluster.vertex_namespace(here))
            _shape(cluster.vertex_namespace(here), f"l{there}", shaping)
            neighbours[here].append(there)
    for v in range(topo.vertices):
        # Neighbours first: the route to a neighbour is what makes it usable as a gateway.
        lines = [f"route add {address(u)}/32 dev l{u} src {address(v)}" for u in neighbours[v]]
        lines += [f"route add {address(t)}/32 via {address(h)} dev l{h} src {address(v)}"
                  for t, h in next_hops(topo, v).items() if t not in neighbours[v]]
        if lines:
            result = subprocess.run(["ip", "-n", cluster.vertex_namespace(v), "-batch", "-"],
                                    input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
            if result.returncode != 0:
                raise FtslideError(f"routes of {cluster.vertex_namespace(v)} could not be added: "
                                   f"{result.stderr.strip()[:200]}")


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
    """Remove cluster ``name`` (``teardown``); return what could not be removed. FtslideError if
    not root or there is no such cluster. Cost: seconds (one ``ip`` call per namespace)."""
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


def job_argv(cluster: Cluster, mpirun: Sequence[str]) -> list[str]:
    """An ``mpirun`` argv (``mpi.mpirun_argv``) with the cluster's options, run in node 0."""
    return launch_argv(cluster, [mpirun[0], *mpirun_options(cluster), *mpirun[1:]])


def launch_argv(cluster: Cluster, mpirun: Sequence[str], node: int = 0) -> list[str]:
    """``mpirun`` argv wrapped to run in ``node``'s namespace (node 0 by default) with its host name."""
    if not cluster.complete:
        raise FtslideError(f"cluster {cluster.name!r} is incomplete (an 'up' was interrupted): "
                           f"'ftslide cluster down --name {cluster.name}' and create it again")
    if cluster.namespace(node) not in existing_namespaces():
        raise FtslideError(f"network namespace {cluster.namespace(node)} of cluster {cluster.name!r} is gone: "
                           f"'ftslide cluster down --name {cluster.name}' and create it again")
    return [str(cluster.agent), str(address(node)), shlex.join(mpirun)]
