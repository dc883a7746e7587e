"""The sliding runtime with real processes: 3D Jacobi on torus:3x2x2 with a spare plane (x:1).

12 processes: nodes 0-7 run the 2x2x2 logical ranks, nodes 8-11 are the spare
plane (one test runs the 16 nodes of torus:4x4, spares y:1); the last tests run 2
or 4 processes per node (24 or 48), a node's processes dying together. Each test names
the nodes killed and where (SIGKILL at a kill point), checks what the
recoveries report, and compares the final checksum, bit for bit, with a
failure-free run of the same configuration.
"""

from __future__ import annotations

import re

import pytest

from ftslide.sliding import runtime as stencil
from ftslide.sliding.core import SlideError, compute_map, make_layout
from ftslide.toolchain.mpi import compile_program
from mpiharness import MPI_SOURCES

pytestmark = pytest.mark.mpi

GRID, SPARES = "torus:3x2x2", "x:1"


@pytest.fixture(scope="module")
def jacobi(mpi_prefix):
    return stencil.build(mpi_prefix)


@pytest.fixture(scope="module")
def reference(mpi_prefix, jacobi):
    """Checksum of the failure-free run (the same for every method: no rank moves)."""
    run = stencil.run(mpi_prefix, GRID, SPARES, "hybrid", program=jacobi, timeout=120)
    assert run.returncode == 0 and run.checksum, run.stdout + run.stderr
    assert not run.recoveries
    return run.checksum


def holding_rank(method: str, kills: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """Kill points for (node, iteration) pairs in iteration order: "iter=I" while the node holds a rank
    under the method's map after the kills before it, else "waiting" (the node is a spare, or a 2D
    slide left it idle: it dies when it starts waiting). Checks the schedule against the core."""
    out, failed = [], []
    layout = make_layout(GRID, SPARES)
    for node, iteration in sorted(kills, key=lambda k: k[1]):
        try:
            holds = node in compute_map(layout, method, failed)
        except SlideError:
            holds = False  # out of spares already: the run stops before this kill
        out.append((node, f"iter={iteration}" if holds else "waiting"))
        failed.append(node)
    return out


# sliding_kill.c's line: "ftslide: node 4 killed at checkpoint#3 (world ranks 8,9; logical ranks 6,7)"
KILLED_LINE = re.compile(r"ftslide: node (\d+) killed at (\S+) \(world ranks ([\d,]+); logical ranks ([\d,]+|none)\)")


def killed_lines(stderr: str) -> dict[int, tuple[str, list[int], list[int]]]:
    """node -> (point, world ranks, logical ranks) of every "killed at" line (logical ranks [] for "none")."""
    return {int(m[1]): (m[2], [int(r) for r in m[3].split(",")], [] if m[4] == "none" else
                        [int(r) for r in m[4].split(",")]) for m in KILLED_LINE.finditer(stderr)}


def run_with(mpi_prefix, jacobi, method, kills, timeout=120, **options):
    """A run of jacobi3d in which every planned kill landed where planned: each node's "killed at" line
    names its point and its K processes (world ranks K*node .. K*node + K-1: consecutive processes form
    a node)."""
    run = stencil.run(mpi_prefix, GRID, SPARES, method, kills, program=jacobi, timeout=timeout, **options)
    lines = killed_lines(run.stderr)
    k = options.get("nodes_as", stencil.NodeOptions()).ranks_per_node
    for node, point in kills:
        assert run.killed.get(node) == point, f"node {node} was not killed at {point}:\n{run.stderr[-3000:]}"
        assert lines.get(node, (None, None))[:2] == (point, list(range(k * node, k * node + k))), \
            f"node {node}: {lines}\n{run.stderr[-3000:]}"
    assert set(run.killed) == {node for node, _ in kills}, run.stderr[-3000:]
    return run


# The kill schedules of the main tests, also run by the Fortran and Python examples
# (tests/test_sliding_languages.py): (method, kills, failed nodes after each recovery, resume iterations).
SCHEDULES = [
    # one failure: node 1 at iteration 12, the last checkpoint was at 10
    ("hybrid", [(1, "iter=12")], [[1]], [10]),
    # two failures one after the other
    ("hybrid", [(1, "iter=12"), (6, "iter=23")], [[1], [1, 6]], [10, 20]),
    # two nodes at once: one recovery, the batch in ascending order
    ("slide1d", [(3, "iter=12"), (1, "iter=12")], [[1, 3]], [10]),
    # simple substitution, two failures
    ("simple", [(1, "iter=12"), (4, "iter=14")], [[1], [1, 4]], [10, 10]),
    # slide2d moves a whole plane: the alive nodes of the old plane become idle and are released at the end
    ("slide2d", [(1, "iter=12")], [[1]], [10]),
    # a failure before the first checkpoint: everyone restarts from the initial values
    ("hybrid", [(0, "iter=3")], [[0]], [0]),
    # all four spares used up (spares = 4 failures): after node 1 the 2D phase has moved the ranks to
    # planes x=1, 2; the last failure is on a node the 1D phase moved a rank onto
    ("hybrid", [(1, "iter=7"), (5, "iter=9"), (10, "iter=16"), (2, "iter=22")],
     [[1], [1, 5], [1, 5, 10], [1, 5, 10, 2]], [5, 5, 15, 20]),
    # routed: one failure (a whole plane, as hybrid), two, and all four spares
    ("routed", [(1, "iter=12")], [[1]], [10]),
    ("routed", [(1, "iter=12"), (6, "iter=23")], [[1], [1, 6]], [10, 20]),
    # (routed keeps node 2's rank for the first two failures and uses spares 10 and 11 one at a time)
    ("routed", [(1, "iter=7"), (5, "iter=9"), (2, "iter=16"), (6, "iter=22")],
     [[1], [1, 5], [1, 5, 2], [1, 5, 2, 6]], [5, 5, 15, 20]),
]
SCHEDULE_IDS = ["one", "two-sequential", "two-simultaneous", "simple-two", "slide2d-one", "before-checkpoint",
                "all-spares", "routed-one", "routed-two", "routed-all-spares"]


def recovered_as_planned(run, failed_after: list[list[int]], resumes: list[int]) -> bool:
    """The recoveries agreed on ``failed_after`` and resumed at ``resumes``. Nodes killed at the same point
    are one batch when every survivor saw both deaths by its shrink, and two recoveries when one death was
    reported later (a delayed failure report, which a loaded machine shows: CI, 2026-11-29): for a single
    planned batch, either way is right, each recovery resuming at the same checkpoint."""
    failed = [r.failed for r in run.recoveries]
    resumed = [r.resume_iteration for r in run.recoveries]
    if failed == failed_after and resumed == resumes:
        return True
    if len(failed_after) != 1 or len(failed_after[0]) < 2 or not failed:
        return False
    first_seen = failed[-1]  # agreed order: the first batch's nodes, then the later one's
    return (sorted(first_seen) == failed_after[0] and all(f == first_seen[:len(f)] for f in failed)
            and resumed == resumes * len(failed))


@pytest.mark.parametrize("method,kills,failed_after,resumes", SCHEDULES, ids=SCHEDULE_IDS)
def test_recovers_with_identical_result(mpi_prefix, jacobi, reference, method, kills, failed_after, resumes):
    run = run_with(mpi_prefix, jacobi, method, kills)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert recovered_as_planned(run, failed_after, resumes), run.stdout
    assert run.checksum == reference, run.stdout


def test_spare_killed_while_waiting(mpi_prefix, jacobi, reference):
    """Spare node 8 dies as soon as it starts waiting; node 1 dies at iteration 12: both are in the batch."""
    run = run_with(mpi_prefix, jacobi, "hybrid", [(8, "waiting"), (1, "iter=12")])
    assert run.returncode == 0, run.stderr[-3000:]
    assert [r.failed for r in run.recoveries] == [[1, 8]]
    assert run.checksum == reference


def test_kill_during_recovery_restarts_it(mpi_prefix, jacobi, reference):
    """Node 1 dies at iteration 12; node 2 dies inside that recovery, after the shrink: a second attempt.
    The 2D slide has just left node 2 idle, but it still holds rank 2's checkpoint: only node 10, which
    waits for that state, sees the failure, and must wake the others."""
    run = run_with(mpi_prefix, jacobi, "hybrid", [(1, "iter=12"), (2, "recovery_state")])
    assert run.returncode == 0, run.stderr[-3000:]
    assert [r.failed for r in run.recoveries] == [[1, 2]]
    assert run.recoveries[0].attempts == 2
    assert run.checksum == reference


def test_kill_at_the_third_checkpoint(mpi_prefix, jacobi, reference):
    """1@checkpoint#3: node 1 dies inside its third checkpoint (after iteration 15, a checkpoint every 5),
    copies sent, version not committed, so the recovery resumes at iteration 10 (the first checkpoint
    would have resumed at 0, a kill at every checkpoint at 0 too). The line names the point as the kill
    did, node 1's one process and the logical rank it held, 1."""
    run = run_with(mpi_prefix, jacobi, "hybrid", [(1, "checkpoint#3")])
    assert killed_lines(run.stderr) == {1: ("checkpoint#3", [1], [1])}, run.stderr[-3000:]
    assert "ftslide: node 1 killed at checkpoint#3 (world ranks 1; logical ranks 1)" in run.stderr
    assert run.returncode == 0, run.stderr[-3000:]
    assert [(r.failed, r.resume_iteration, r.attempts) for r in run.recoveries] == [([1], 10, 1)], run.stdout
    assert run.checksum == reference


def test_kill_at_the_second_start_of_an_iteration(mpi_prefix, jacobi, reference):
    """1@iter=12 and 6@iter=11#2: node 6 passes iteration 11 once before node 1 dies at 12, and dies when
    the rollback to checkpoint 10 makes it start iteration 11 again: two recoveries, both from 10. (With
    6@iter=11 node 6 would die first, alone.) Under hybrid's map after node 1, node 6 still holds rank 6."""
    run = run_with(mpi_prefix, jacobi, "hybrid", [(1, "iter=12"), (6, "iter=11#2")])
    assert killed_lines(run.stderr) == {1: ("iter=12", [1], [1]), 6: ("iter=11#2", [6], [6])}, run.stderr[-3000:]
    assert compute_map(make_layout(GRID, SPARES), "hybrid", [1])[6] == 6
    assert run.returncode == 0, run.stderr[-3000:]
    assert [(r.failed, r.resume_iteration) for r in run.recoveries] == [([1], 10), ([1, 6], 10)], run.stdout
    assert run.checksum == reference


def test_kill_in_the_second_recovery(mpi_prefix, jacobi, reference):
    """2@recovery_map#2: node 2 goes through the map step of the first recovery (node 1 at iteration 12)
    and dies at that of the second (node 6 at iteration 23), which restarts: attempts 2, node 2 in its
    batch. Hybrid's 2D slide left node 2 idle after the first recovery: its line says logical ranks none."""
    run = run_with(mpi_prefix, jacobi, "hybrid", [(1, "iter=12"), (6, "iter=23"), (2, "recovery_map#2")])
    assert killed_lines(run.stderr)[2] == ("recovery_map#2", [2], []), run.stderr[-3000:]
    assert "ftslide: node 2 killed at recovery_map#2 (world ranks 2; logical ranks none)" in run.stderr
    assert 2 not in compute_map(make_layout(GRID, SPARES), "hybrid", [1])
    assert run.returncode == 0, run.stderr[-3000:]
    assert [(r.failed, r.resume_iteration, r.attempts) for r in run.recoveries] == [([1], 10, 1), ([1, 6, 2], 20, 2)], \
        run.stdout
    assert run.checksum == reference


def test_kill_between_the_split_and_the_cartesian_creation(mpi_prefix, jacobi, reference):
    """2@recovery_cart: node 1 dies at iteration 12 and node 2 in that recovery, after the survivors'
    split and before the Cartesian creation (build_cart's two steps, each followed by an agreement):
    the attempt fails everywhere alike and the next one recovers both, with the failure-free result."""
    run = run_with(mpi_prefix, jacobi, "hybrid", [(1, "iter=12"), (2, "recovery_cart")])
    assert run.returncode == 0, run.stderr[-3000:]
    assert [(r.failed, r.resume_iteration, r.attempts) for r in run.recoveries] == [([1, 2], 10, 2)], run.stdout
    assert run.checksum == reference


def test_malformed_occurrences_never_fire(mpi_prefix, jacobi, reference):
    """FTSLIDE_KILL entries whose #N is no positive integer (#0, #x, an empty #, #-1) name no occurrence:
    nobody dies, the run ends as a failure-free one. The driver refuses them before launching."""
    from ftslide.errors import FtslideError

    kills = [(1, "checkpoint#0"), (2, "iter=3#x"), (3, "recovery_start#"), (4, "iter=12#-1")]
    for node, point in kills:
        with pytest.raises(FtslideError, match="#N for the Nth time"):
            stencil.parse_kill(f"{node}@{point}")
    run = stencil.run(mpi_prefix, GRID, SPARES, "hybrid", kills, program=jacobi, timeout=120)
    assert run.returncode == 0 and not run.killed and "killed at" not in run.stderr, run.stderr[-3000:]
    assert not run.recoveries and run.checksum == reference


def test_kill_syntax():
    """The driver's NODE@POINT[#N] (and NODE@ITERATION[#N]): the point as the "killed at" line names it."""
    from ftslide.errors import FtslideError

    assert stencil.parse_kill("1@checkpoint#3") == (1, "checkpoint#3")
    assert stencil.parse_kill("2@12#2") == (2, "iter=12#2")
    assert stencil.parse_kill("2@iter=5#02") == (2, "iter=5#2")
    assert stencil.parse_kill("0@recovery_map") == (0, "recovery_map")
    for bad in ("1@checkpoint#3#4", "1@bogus#2", "x@checkpoint#2", "1@checkpoint#３"):
        with pytest.raises(FtslideError, match="invalid kill"):
            stencil.parse_kill(bad)


@pytest.mark.parametrize("method,nodes", [("hybrid", [1, 5, 10, 2, 4]), ("routed", [1, 5, 2, 6, 4])])
def test_out_of_spares_is_a_clear_error(mpi_prefix, jacobi, method, nodes):
    """Five workers die one after another (spares + 1): the fifth recovery reports out of spares."""
    kills = holding_rank(method, list(zip(nodes, [7, 9, 16, 22, 27])))
    assert all(point.startswith("iter=") for _, point in kills), kills
    run = run_with(mpi_prefix, jacobi, method, kills)
    assert run.returncode != 0
    assert len(run.recoveries) == 4
    assert run.checksum is None
    assert [str(e) for e in run.errors] == ["recovery: out of spares: the failures exceed what the method can absorb "
                                             "(sliding_on_no_spare=degrade runs on)"]
    assert run.errors[0].status is stencil.Status.ERR_NO_SPARE, run.stderr


def test_slide2d_runs_out_after_one_plane(mpi_prefix, jacobi):
    """slide2d consumes the whole spare plane for node 1; node 6's failure then cannot be absorbed."""
    run = run_with(mpi_prefix, jacobi, "slide2d", [(1, "iter=12"), (6, "iter=20")])
    assert run.returncode != 0
    assert [r.failed for r in run.recoveries] == [[1]]
    assert [e.status for e in run.errors] == [stencil.Status.ERR_NO_SPARE], run.stderr


def test_bad_layouts_are_refused_before_launch(mpi_prefix):
    from ftslide.errors import FtslideError

    with pytest.raises(FtslideError, match="shrink puts several ranks on one node"):
        stencil.run(mpi_prefix, GRID, SPARES, "shrink")
    with pytest.raises(FtslideError, match="2 or 3 dimensions"):
        stencil.run(mpi_prefix, "torus:4x4x2x2", SPARES, "hybrid")
    with pytest.raises(FtslideError, match="nodes 0..11"):
        stencil.run(mpi_prefix, GRID, SPARES, "hybrid", [(12, "iter=3")])
    with pytest.raises(FtslideError):
        stencil.run(mpi_prefix, "torus:3x2", "q:1", "hybrid")


def test_layout_must_fit_the_process_count(mpi_prefix, jacobi):
    """8 processes for a 12-node grid: every process exits 2 with the runtime's one-line reason."""
    from ftslide.toolchain import mpi

    result = mpi.run(mpi_prefix, ["-np", "8", *jacobi, GRID, SPARES, "hybrid"], timeout=60)
    assert result.returncode == 2, result.stderr
    assert "one process per node of the grid, spares included" in result.stderr


@pytest.mark.parametrize("seed", [3, 17])
def test_random_kill_schedules(mpi_prefix, jacobi, reference, seed):
    """Six seeded random schedules per seed: 1-3 nodes die at random iterations, spares while waiting,
    sometimes a node inside a recovery. Every run either matches the failure-free checksum or stops
    with the uniform out-of-spares error (e.g. slide1d with two failures on one line); none hangs."""
    import random

    rng = random.Random(seed)
    for attempt in range(6):
        method = rng.choice(["hybrid", "slide1d", "simple", "routed"])
        nodes = rng.sample(range(12), rng.randint(1, 3))
        kills = holding_rank(method, [(node, 0 if node >= 8 else rng.randint(0, 38)) for node in nodes])
        if len(kills) > 1 and kills[-1][1].startswith("iter") and rng.random() < 0.25:
            kills[-1] = (kills[-1][0], rng.choice(["recovery_start", "recovery_state"]))
        run = run_with(mpi_prefix, jacobi, method, kills)
        what = f"seed {seed} run {attempt}: {method} {kills}"
        if run.returncode == 0:
            assert run.checksum == reference, f"{what}\n{run.stdout}"
        else:
            assert run.errors and all(e.status is stencil.Status.ERR_NO_SPARE for e in run.errors), \
                f"{what}\n{run.stderr[-3000:]}"


def test_kill_while_others_take_a_checkpoint(mpi_prefix, jacobi):
    """torus:4x4 (16 processes, spares y:1): a node dies at the start of the iteration before a
    checkpoint (iterations 9, 14, 19 with a checkpoint every 5). Its neighbours fail that iteration's
    halo exchange and recover; nodes two hops away may finish it and enter sliding_checkpoint's
    agreement over the Cartesian communicator, which a revoke does not interrupt. Before the fix the
    recovering nodes never joined that agreement and both sides waited for ever (8 hangs in 52 runs
    of `ftslide faults --grid torus:4x4 --spares y:1 --seed 11`); now a recovery first runs one
    agreement over the old Cartesian communicator, which meets the checkpoint's and fails it."""
    grid, spares = "torus:4x4", "y:1"
    reference = stencil.run(mpi_prefix, grid, spares, "routed", program=jacobi, iterations=30, timeout=120)
    assert reference.returncode == 0 and reference.checksum, reference.stderr[-3000:]
    for node, iteration in [(10, 9), (5, 14), (6, 19)]:
        run = stencil.run(mpi_prefix, grid, spares, "routed", [(node, f"iter={iteration}")], program=jacobi,
                          iterations=30, timeout=90)
        holds = compute_map(make_layout(grid, spares), "routed", []).index(node)
        assert killed_lines(run.stderr) == {node: (f"iter={iteration}", [node], [holds])}, run.stderr[-3000:]
        assert run.returncode == 0 and run.checksum == reference.checksum, run.stderr[-3000:]
        assert [r.failed for r in run.recoveries] == [[node]], run.stdout


# ---- K processes per node --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nodes_program(mpi_prefix):
    """tests/mpi/sliding/nodes.c, linked with libsliding: how sliding_create_info groups the processes."""
    library = stencil.build_library(mpi_prefix)
    return compile_program(mpi_prefix, [MPI_SOURCES / "sliding" / "nodes.c"], flags=("-O2", "-Wall", "-Werror"),
                           include_dirs=[MPI_SOURCES, stencil.HEADER_DIR], link=stencil.link_flags(library))


@pytest.mark.parametrize("k", [2, 4])
def test_ranks_per_node_recover_with_identical_result(mpi_prefix, jacobi, k):
    """K processes per node (24 or 48 processes on the 12 nodes, consecutive processes forming a node): nodes 1
    and 6 die whole at iterations 12 and 23; the recoveries agree on the nodes, move the K ranks of each node
    together, and end with the checksum of a failure-free run with the same K."""
    nodes_as = stencil.node_options(GRID, SPARES, k)
    base = stencil.run(mpi_prefix, GRID, SPARES, "hybrid", program=jacobi, timeout=180, nodes_as=nodes_as)
    assert base.returncode == 0 and base.checksum, base.stderr[-3000:]
    run = stencil.run(mpi_prefix, GRID, SPARES, "hybrid", [(1, "iter=12"), (6, "iter=23")], program=jacobi,
                      timeout=180, nodes_as=nodes_as)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.killed == {1: "iter=12", 6: "iter=23"}
    # each line names the node's K processes (world ranks K*node ..) and the K logical ranks they held
    lines = killed_lines(run.stderr)
    for node in (1, 6):
        point, world, logical = lines[node]
        assert world == list(range(k * node, k * node + k)) and len(set(logical)) == k, lines
    assert [r.failed for r in run.recoveries] == [[1], [1, 6]]
    assert [r.resume_iteration for r in run.recoveries] == [10, 20]
    assert run.checksum == base.checksum
    # hybrid's first failure moves the 4 node ranks of a plane: K ranks each, 8 doubles (10^3 cells) apiece
    assert run.recoveries[0].moved_bytes == 4 * k * 8000
    assert run.recoveries[0].buddy_bytes == 8 * k * 8000


def test_a_node_dies_whole_and_alone(mpi_prefix, nodes_program, run_mpi):
    """24 processes, 2 per node (consecutive ranks): node 3 (world ranks 6 and 7) passes the kill point
    "probe"; the first of its two processes to get there takes the other with it, and the 22 survivors are
    exactly the other nodes' processes."""
    run = run_mpi(nodes_program, 24, args=["--emulate-nodes", "2", GRID, SPARES], env={"FTSLIDE_KILL": "3@probe"},
                  timeout=90)
    logical = run.values("logical", [6, 7])
    assert killed_lines(run.stderr) == {3: ("probe", [6, 7], [int(logical[6]), int(logical[7])])}, run.describe()
    survivors = [r for r in range(24) if r not in (6, 7)]
    assert run.values("alive", survivors) == {r: "22" for r in survivors}, run.describe()
    assert run.value(6, "alive") is None and run.value(7, "alive") is None
    assert run.values("node", range(24)) == {r: str(r // 2) for r in range(24)}
    assert run.values("lane", range(24)) == {r: str(r % 2) for r in range(24)}
    assert set(run.values("block", range(24)).values()) == {"2x1x1"} and set(run.values("ranks", range(24)).values()) == {"16"}
    # node 0 holds node rank 0: its block is ranks 0 and 4 of the 4x2x2 rank grid (x = 0 and 1)
    assert (run.value(0, "logical"), run.value(1, "logical")) == ("0", "4")


def test_nodes_placed_by_a_coordinate_file(mpi_prefix, nodes_program, run_mpi, tmp_path):
    """The coordinate file puts job node j (processes 2j, 2j+1) at grid node 11 - j: kill point 1@probe takes
    grid node 1, world ranks 20 and 21; the block layout follows the grid node, not the process order."""
    layout = make_layout(GRID, SPARES)
    coords = tmp_path / "nodes.txt"
    coords.write_text("# name x y z\n" + "".join(f"{j} {' '.join(map(str, layout.coords(11 - j)))}\n"
                                                  for j in range(12)))
    run = run_mpi(nodes_program, 24, args=["--emulate-nodes", "2", "--node-coords", str(coords), "--block", "1x1x2",
                                            GRID, SPARES], env={"FTSLIDE_KILL": "1@probe"}, timeout=90)
    logical = run.values("logical", [20, 21])
    assert killed_lines(run.stderr) == {1: ("probe", [20, 21], [int(logical[20]), int(logical[21])])}, run.describe()
    assert run.values("node", [0, 1, 22, 23]) == {0: "11", 1: "11", 22: "0", 23: "0"}, run.describe()
    assert run.value(23, "block") == "1x1x2" and (run.value(22, "logical"), run.value(23, "logical")) == ("0", "1")
    survivors = [r for r in range(24) if r not in (20, 21)]
    assert run.values("alive", survivors) == {r: "22" for r in survivors}
    assert run.value(20, "alive") is None and run.value(21, "alive") is None


@pytest.mark.parametrize("np,args,status", [
    (24, ["--emulate-nodes", "5"], "ERR_NODES"),             # nodes of 5, 5, 5, 5 and 4 processes
    (24, ["--key-constant", "7"], "ERR_NODE_COUNT"),         # every process on one node, spares asked for
    (24, ["--emulate-nodes", "2", "--block", "2x2x1"], "ERR_BLOCK"),   # 4 ranks per node, 2 processes
    (24, ["--emulate-nodes", "2", "--block", "2x1"], "ERR_BLOCK"),     # a 2D block on a 3D grid
    (13, [], "ERR_SIZE"),                                    # not a multiple of the 12 nodes
    (24, ["--emulate-nodes", "2", "--node-coords", "TWICE"], "ERR_COORDS"),
    (24, ["--emulate-nodes", "2", "--node-coords", "MISSING"], "ERR_COORDS"),
    (24, ["--emulate-nodes", "2", "--node-coords", "/nonexistent/nodes.txt"], "ERR_COORDS"),
    (24, ["--key-constant", "x1"], "ERR_INFO"),              # a key that is no integer
], ids=["different-counts", "one-node", "block-product", "block-dims", "size", "coords-twice", "coords-missing",
        "coords-unreadable", "key-syntax"])
def test_bad_node_layouts_are_one_status_everywhere(mpi_prefix, nodes_program, run_mpi, tmp_path, np, args, status):
    """Every process of the job returns the same status from sliding_create_info, and nothing starts."""
    twice, missing = tmp_path / "twice.txt", tmp_path / "missing.txt"
    twice.write_text("0 0 0 0\n1 0 0 1\n2 0 0 1\n")             # two nodes at 0.0.1
    missing.write_text("".join(f"{j}\n" for j in range(11)))    # node 11 is not named
    args = [str(twice) if a == "TWICE" else str(missing) if a == "MISSING" else a for a in args]
    run = run_mpi(nodes_program, np, args=[*args, GRID, SPARES], timeout=90)
    assert run.values("status", range(np)) == {r: status for r in range(np)}, run.describe()
    assert run.values("node", range(np)) == {r: None for r in range(np)}
