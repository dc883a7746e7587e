"""Our reliable broadcast inside Open MPI: MPIX_Comm_revoke on the BMG core (revoke-bmg/, patch ompi/04).

All runs use real processes of the project's Open MPI build and real SIGKILLs:

- ompi_info lists mpi_ft_reliable_bcast with our two algorithms, ours (lean) is the default, an invalid
  value is refused naming the valid ones;
- our module really carries the revoke (its MPI_T counter mpi_ft_ftslide_messages_sent: exactly np-1 messages
  for lean without failures, more for flooding, none with upstream's algorithm selected);
- the conformance suite (tests/test_conformance.py) passes with our flooding variant and with upstream's
  binomial-graph diffusion (ours lean is the default, so test_conformance.py itself runs on lean);
- kills during the propagation (tests/mpi/revoke/revoke_kill.c): the origin after its first message, an inner
  vertex of the lean tree after it delivered and before it forwarded, after its first forward, two at once, one
  in a second round; every survivor's pending receive must end with MPIX_ERR_REVOKED and the shrink must keep
  exactly the survivors;
- CID reuse: a communicator that reuses a revoked one's CID is not revoked by late messages;
- inter-communicators: a revoke from either group reaches both groups.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pytest

import test_conformance
from mpiharness import run_program

pytestmark = pytest.mark.mpi

REVOKED = "MPIX_ERR_REVOKED"
VARIANTS = {
    "flood": ("--mca", "mpi_ft_reliable_bcast", "ftslide_flood"),
    "lean": ("--mca", "mpi_ft_reliable_bcast", "ftslide_lean"),
    # the lean tree with inner vertices: the 4-nomial one (the default on one node, auto, is a star around the
    # origin: every vertex but the origin is a leaf)
    "lean4": ("--mca", "mpi_ft_reliable_bcast", "ftslide_lean", "--mca", "mpi_ft_ftslide_radix", "4"),
    "upstream": ("--mca", "mpi_ft_reliable_bcast", "bmg"),
}
VALID = "Valid values: 0|none, 1|bmg, 2|full, 3|ftslide_flood, 4|ftslide_lean"


def ompi_info(prefix, *args, env=None):
    return subprocess.run([str(prefix / "bin" / "ompi_info"), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_ompi_info_lists_parameter(mpi_prefix):
    out = ompi_info(mpi_prefix, "--param", "mpi", "all", "--level", "9").stdout
    assert re.search(r'mpi_ft_reliable_bcast" \(current value: "ftslide_lean"', out), out
    assert VALID in out, out
    assert "ftslide's BMG core" in out, out


INVALID = (r"Variable +: mpi_ft_reliable_bcast\s+Value +: gossip\s+Valid values : 0\|none, 1\|bmg, 2\|full, "
           r"3\|ftslide_flood, 4\|ftslide_lean")


def test_invalid_value_is_refused(mpi_prefix, mpi_program):
    """Open MPI's enum check names the parameter and its valid values, from ompi_info and from every process of
    a job, which then goes on with the default (as Open MPI does for any invalid enum value)."""
    result = ompi_info(mpi_prefix, "--param", "mpi", "all", "--level", "9",
                       env={"OMPI_MCA_mpi_ft_reliable_bcast": "gossip"})
    text = result.stdout + result.stderr
    assert "An invalid value was supplied for an enum variable" in text, text
    assert re.search(INVALID, text), text
    run = run_program(mpi_prefix, mpi_program("revoke/revoke_kill.c"), 4, args=["1", "0"],
                      mpirun_options=["--mca", "mpi_ft_reliable_bcast", "gossip"], timeout=60)
    assert run.returncode == 0 and re.search(INVALID, run.stdout + run.stderr), run.describe()
    assert run.values("rc_1", range(4)) == {r: REVOKED for r in range(4)}, run.describe()
    assert sent_total(run, range(4), "sent_1") == 3, run.describe()  # the default: lean, 3 messages at np 4


@pytest.mark.parametrize("radix", ["1", "-3"])
def test_invalid_radix_gets_one_line_and_auto(mpi_prefix, mpi_program, radix):
    """mpi_ft_ftslide_radix below 2 (and not 0): one line naming the parameter at MPI_Init, then auto (a star on one
    node: still one message per other process)."""
    run = run_program(mpi_prefix, mpi_program("revoke/revoke_kill.c"), 4, args=["1", "0"],
                      mpirun_options=["--mca", "mpi_ft_ftslide_radix", radix], timeout=60)
    text = run.stdout + run.stderr
    assert run.returncode == 0, run.describe()
    assert (f"ftslide_rbcast: mpi_ft_ftslide_radix {radix} is neither 0 (auto) nor a radix of at least 2; "
            "using 0 (auto)") in text, run.describe()
    assert run.values("rc_1", range(4)) == {r: REVOKED for r in range(4)}, run.describe()
    assert sent_total(run, range(4), "sent_1") == 3, run.describe()


@pytest.mark.parametrize("origin,kills", [(1, {}), (0, {}), (1, {3: "bmg_deliver_1"})],
                         ids=["origin-radix2", "origin-star", "inner-dies"])
def test_processes_with_different_radices_all_get_the_revoke(mpi_prefix, mpi_program, origin, kills):
    """np 8, odd ranks set mpi_ft_ftslide_radix 2 (a binary tree), even ranks 8 (a star); two revokes from
    `origin`; with "inner-dies" rank 3 (inner in the binary tree from 1: children 5, 7) dies when it delivers.
    Each revoke runs along its origin's tree (the radix travels in its messages), so every survivor sees
    both revokes; the processes that meet the other radix say so once. Before the radix travelled, a star
    process at an inner position of a binary tree forwarded nothing and its subtree waited forever."""
    per_rank = 'OMPI_MCA_mpi_ft_ftslide_radix=$((OMPI_COMM_WORLD_RANK % 2 ? 2 : 8)) exec "$0" "$@"'
    run = run_program(mpi_prefix, Path("sh"), 8, args=["-c", per_rank, str(mpi_program("revoke/revoke_kill.c")),
                                                       "2", str(origin)], kill=kills, timeout=90)
    survivors_after(run, 8, kills, 2)
    assert "mpi_ft_ftslide_radix differs between processes" in run.stdout + run.stderr, run.describe()


def test_radix_is_listed(mpi_prefix):
    """ompi_info lists mpi_ft_ftslide_radix with its default, 0 (auto)."""
    result = ompi_info(mpi_prefix, "--param", "mpi", "all", "--level", "9")
    assert re.search(r"mpi_ft_ftslide_radix.*\b0\b", result.stdout), result.stdout[-2000:]


def survivors_after(run, np, victims, rounds, revoked=(REVOKED,)):
    """The victims died, every other rank finished; in every round every survivor saw its pending receive end
    the same way, one of `revoked` (so did every victim that got that far), each rank still there got the same
    shrunk membership, and the last one is exactly the survivors.

    Only the survivors must agree on the receive: the broadcast's guarantee is for processes that never crash
    (docs/protocols.md). A victim may deliver and die before passing the revoke on (a leaf of the lean tree
    that got it from an origin dying after its first message, killed at its own first forward: seed 43 run 77),
    and then no survivor sees it."""
    survivors = [r for r in range(np) if r not in victims]
    assert all(run.killed.get(v) == p for v, p in victims.items()), run.describe()
    assert run.values("finished", survivors) == {r: "1" for r in survivors}, run.describe()
    for i in range(1, rounds + 1):
        rcs = {r: v for r, v in run.values(f"rc_{i}", range(np)).items() if v is not None}
        kept = {rcs[r] for r in survivors if r in rcs}
        assert len(kept) == 1 and set(rcs.values()) <= set(revoked) and set(survivors) <= set(rcs), \
            f"round {i}: {rcs}\n{run.describe()}"
        members = {r: v for r, v in run.values(f"members_{i}", range(np)).items() if v is not None}
        assert len(set(members.values())) == 1, f"round {i}: {members}\n{run.describe()}"
    assert members[survivors[0]] == ",".join(map(str, survivors)), run.describe()
    for r in victims:
        assert run.value(r, "finished") is None, run.describe()


def sent_total(run, ranks, key):
    values = run.values(key, ranks)
    assert None not in values.values(), run.describe()
    return sum(int(v) for v in values.values())


@pytest.mark.parametrize("which", ["default", "lean", "flood", "upstream"])
def test_which_broadcast_runs(mpi_prefix, mpi_program, which):
    """np 8, two revokes from rank 0, no failure. Lean sends exactly one message per edge of the spanning tree
    (7), flooding more; with upstream's algorithm only upstream's counter moves."""
    options = VARIANTS.get(which, ())
    run = run_program(mpi_prefix, mpi_program("revoke/revoke_kill.c"), 8, args=["2", "0"],
                      mpirun_options=options, timeout=90)
    survivors_after(run, 8, {}, 2)
    counts = [sent_total(run, range(8), f"sent_{i}") for i in (1, 2)]
    if which in ("default", "lean"):
        assert counts == [7, 7], run.describe()
    elif which == "flood":
        assert all(c > 7 for c in counts), f"{counts}\n{run.describe()}"
    else:
        assert counts == [0, 0], run.describe()
    upstream = [sent_total(run, range(8), f"usent_{i}") for i in (1, 2)]
    assert (all(c > 0 for c in upstream) if which == "upstream" else upstream == [0, 0]), run.describe()


# --- the conformance suite with our flooding variant and with upstream's diffusion -----------------------------

@pytest.fixture(params=["flood", "upstream"])
def run_mpi(request, mpi_prefix):
    """Overrides conftest's run_mpi: each conformance test below runs with the selected broadcast."""

    def run(program, np, **kwargs):
        kwargs["mpirun_options"] = (*VARIANTS[request.param], *kwargs.get("mpirun_options", ()))
        return run_program(mpi_prefix, program, np, **kwargs)

    return run


for _name in dir(test_conformance):
    if _name.startswith("test_") and _name != "test_checks_fail_without_fault_tolerance":
        globals()[f"{_name}_rbcast"] = getattr(test_conformance, _name)


# --- kills during the propagation -------------------------------------------------------------------------------

# (name, np, rounds, origin, kills). Lean spanning tree with radix 4 (4-nomial, rooted at the origin o: over
# positions v = rank - o mod np, parent(v) = v with its lowest nonzero base-4 digit cleared) over 8 ranks from
# origin 0: 0 -> 1, 2, 3, 4; 4 -> 5, 6, 7. Flooding neighbours of v: v+-1, v+-2, v+-4 (mod 8). The lean cases run
# with radix 4 (lean4) and with the default (auto: a star on one node, where these victims are leaves).
CASES = [
    # the origin hands its first message to the BTL and dies: that one receiver must carry it to everybody
    ("origin_after_first_send", 6, 1, 0, {0: "bmg_sent_1"}),
    # inner vertex 4 (children 5, 6, 7) delivers and dies before forwarding anything
    ("inner_delivered_not_forwarded", 8, 1, 0, {4: "bmg_deliver_1"}),
    # inner vertex 4 dies after its first forward
    ("inner_after_first_forward", 8, 1, 0, {4: "bmg_sent_1"}),
    # from origin 7 over 16 (positions: 7 -> 8, 9, 10, 11 (4), 15 (8), 3 (12); 11 -> 12, 13, 14; 15 -> 0, 1, 2):
    # the inner vertices 11 and 15 die before forwarding, their children get it around them
    ("two_inner_not_forwarded", 16, 1, 7, {11: "bmg_deliver_1", 15: "bmg_deliver_1"}),
    # rank 3 dies when it delivers the round-2 revoke, before it forwards
    ("second_round", 6, 3, 1, {3: "bmg_deliver_2"}),
    # a rank dies just before the revoke, unnoticed by the origin when it starts
    ("dead_before_revoke", 6, 2, 0, {2: "before_revoke_1"}),
    # from origin 13 over 16, positions 4 and 8 (ranks 1 and 5, children 2, 3, 4 and 6, 7, 8) both die on delivery
    ("inner_pair_16", 16, 1, 13, {1: "bmg_deliver_1", 5: "bmg_deliver_1"}),
]


@pytest.mark.parametrize("variant", ["lean", "lean4", "flood"])
@pytest.mark.parametrize("name,np,rounds,origin,kills", CASES, ids=[c[0] for c in CASES])
def test_kill_during_propagation(mpi_prefix, mpi_program, variant, name, np, rounds, origin, kills):
    if variant == "lean" and any(p.startswith("bmg_sent") for r, p in kills.items() if r != origin):
        pytest.skip("on one node the default lean tree is a star: a vertex other than the origin never forwards")
    run = run_program(mpi_prefix, mpi_program("revoke/revoke_kill.c"), np, args=[str(rounds), str(origin)],
                      kill=kills, mpirun_options=VARIANTS[variant], timeout=90)
    survivors_after(run, np, kills, rounds)


def random_case(rng):
    np = rng.randint(4, 8)
    rounds = rng.randint(1, 3)
    victims = rng.sample(range(np), rng.randint(1, min(3, np - 2)))
    kills = {}
    for v in victims:
        kind = rng.choice(["bmg_deliver", "bmg_sent", "before_revoke"])
        kills[v] = f"{kind}_{rng.randint(1, 2 if kind == 'bmg_sent' else rounds)}"
    return np, rounds, rng.randrange(np), kills, rng.choice(["lean", "lean4", "flood"])


def test_kill_during_propagation_randomized(mpi_prefix, mpi_program):
    """REVOKE_RANDOM_RUNS (default 6) runs, np 4-8, 1-3 rounds, 1-3 victims at random kill points, random origin
    and variant; seed in REVOKE_SEED. A kill point a victim never reaches (bmg_sent_2 at a rank that has little to
    forward, bmg_deliver_N at a rank that was the origin, before_revoke_N at the origin of round N) leaves it
    alive: the run is checked with the victims that really died."""
    runs = int(os.environ.get("REVOKE_RANDOM_RUNS", "6"))
    seed = int(os.environ.get("REVOKE_SEED", "11"))
    rng = random.Random(seed)
    program = mpi_program("revoke/revoke_kill.c")
    for attempt in range(runs):
        np, rounds, origin, kills, variant = random_case(rng)
        context = f"seed {seed} run {attempt}: np {np} rounds {rounds} origin {origin} kills {kills} {variant}"
        try:
            env = {"FTSLIDE_KILL": ",".join(f"{r}@{p}" for r, p in kills.items())}
            run = run_program(mpi_prefix, program, np, args=[str(rounds), str(origin)], env=env,
                              mpirun_options=VARIANTS[variant], timeout=120)
            died = {r: p for r, p in kills.items() if run.killed.get(r) == p}
            # all or none: if the origin dies having reached no survivor, none may see the revoke
            survivors_after(run, np, died, rounds, revoked=(REVOKED, "NOT_REVOKED"))
        except AssertionError as exc:
            raise AssertionError(f"{context}\n{exc}") from None


@pytest.mark.parametrize("variant", ["local", "lean", "upstream"])
def test_refused_rendezvous_send_fails(mpi_prefix, mpi_program, variant):
    """np 2: rank 1 revokes, then rank 0 sends 4 MiB to it on the revoked communicator; rank 1 refuses the
    rendezvous (NACK) and the send must fail with MPIX_ERR_REVOKED. With the revoke kept local (none) rank 0
    learns of it only from the NACK: before patch ompi/06 that send returned MPI_SUCCESS 10 times out of 10."""
    options = ("--mca", "mpi_ft_reliable_bcast", "none") if variant == "local" else VARIANTS[variant]
    run = run_program(mpi_prefix, mpi_program("revoke/refused_send.c"), 2, mpirun_options=options, timeout=60)
    assert run.returncode == 0, run.describe()
    assert run.value(1, "revoke") == "MPI_SUCCESS", run.describe()
    assert run.value(0, "sent") == REVOKED, run.describe()
    assert run.values("finished", [0, 1]) == {0: "1", 1: "1"}, run.describe()


SEND_AFTER_FREE = [(next_step, count, "send") for next_step in ("free", "finalize", "leave")
                   for count in (16, 8192, 4 << 20)] + [("free", 8192, "isend"), ("free", 8192, "ssend"),
                                                        ("finalize", 16, "ssend")]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("variant", ["default", "upstream"])
@pytest.mark.parametrize("next_step,count,mode", SEND_AFTER_FREE,
                         ids=[f"{n}-{c}-{m}" for n, c, m in SEND_AFTER_FREE])
def test_send_reaching_a_receiver_that_moved_on(mpi_prefix, mpi_program, tmp_path, variant, next_step, count, mode):
    """np 2 (tests/mpi/revoke/send_after_free.c): rank 1 revokes a communicator and frees it (free), frees it and
    enters MPI_Finalize (finalize) or keeps it and waits elsewhere (leave), while rank 0 stays out of MPI; then rank 0
    sends on it. A rendezvous send (8 KiB, 4 MiB, any MPI_Ssend) must end with MPIX_ERR_REVOKED, an eager one may
    succeed, and both processes must get through MPI_Finalize. Before patch ompi/13 every free and finalize case hung
    (the rendezvous header found no communicator at rank 1; the eager message was taken by the communicator that
    reused the CID in MPI_Finalize, whose barrier then never completed), with both module sets."""
    options = () if variant == "default" else ("--mca", "coll", "^ftera", *VARIANTS["upstream"])
    run = run_program(mpi_prefix, mpi_program("revoke/send_after_free.c"), 2,
                      args=[str(tmp_path), str(count), next_step, mode], mpirun_options=options, timeout=60)
    assert run.returncode == 0, run.describe()
    eager = count <= 16 and mode != "ssend"
    assert run.value(0, "send") in ((REVOKED, "MPI_SUCCESS") if eager else (REVOKED,)), run.describe()
    assert run.values("finalized", [0, 1]) == {0: "1", 1: "1"}, run.describe()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("what,count,expected", [("null", 0, "MPI_ERR_COMM"), ("freed", 0, "MPI_ERR_COMM"),
                                                 ("twice", 0, "MPI_SUCCESS"), ("finalizing", 16, "MPI_SUCCESS"),
                                                 ("finalizing", 8192, REVOKED), ("finalizing", 4 << 20, REVOKED)])
def test_bad_revokes_and_sends_end_in_an_error_class(mpi_prefix, mpi_program, tmp_path, what, count, expected):
    """np 2 (tests/mpi/revoke/revoke_bad_input.c, errors returned): MPIX_Comm_revoke of MPI_COMM_NULL or of a freed
    handle fails with MPI_ERR_COMM, a second revoke of one communicator succeeds, and a send on MPI_COMM_WORLD to a
    process already inside MPI_Finalize succeeds eagerly or fails with MPIX_ERR_REVOKED (patch ompi/14: before it,
    the 8 KiB and 4 MiB sends hung, the receiver waiting in MPI_Finalize for the sender). Both processes finalize."""
    run = run_program(mpi_prefix, mpi_program("revoke/revoke_bad_input.c"), 2,
                      args=[what, str(tmp_path), str(count)], timeout=60)
    assert run.returncode == 0, run.describe()
    assert run.value(0, "rc") == expected, run.describe()
    assert run.values("finalized", [0, 1]) == {0: "1", 1: "1"}, run.describe()


# --- CID reuse and inter-communicators --------------------------------------------------------------------------

def _finalize_counters(text):
    return [tuple(map(int, m.groups())) for m in
            re.finditer(r"ftslide_rbcast: (\d+) messages sent, (\d+) broadcasts delivered, (\d+) kept for later, "
                        r"(\d+) dropped", text)]


@pytest.mark.parametrize("variant", ["lean", "flood"])
def test_cid_reuse_is_not_revoked(mpi_prefix, mpi_program, variant):
    """np 5, 100 iterations: revoke a dup of MPI_COMM_WORLD, free it, dup again at once while the revoke's messages
    may still travel; the CIDs of freed communicators are reused (a revoked one's after 64 more, patch ompi/13) with
    another epoch: no new communicator is ever revoked and every revoke is delivered exactly once per process
    (counted at finalize, mpi_ft_verbose 1), late duplicates for freed ones being filtered or dropped."""
    run = run_program(mpi_prefix, mpi_program("revoke/revoke_reuse.c"), 5, args=["100"],
                      mpirun_options=[*VARIANTS[variant], "--mca", "mpi_ft_verbose", "1"], timeout=120)
    assert run.returncode == 0, run.describe()
    assert run.values("bad", range(5)) == {r: "0" for r in range(5)}, run.describe()
    counters = _finalize_counters(run.stdout + run.stderr)
    assert len(counters) == 5, run.describe()
    assert sum(c[1] for c in counters) == 100 * 4, run.describe()  # every non-origin delivered each revoke once


@pytest.mark.parametrize("variant", ["lean", "flood", "upstream"])
@pytest.mark.parametrize("origin", [0, 3])
def test_intercommunicator(mpi_prefix, mpi_program, variant, origin):
    """np 5, groups {0, 2, 4} and {1, 3} joined by an inter-communicator; world rank `origin` revokes it: the
    pending receive ends REVOKED in both groups; lean sends exactly 4 messages (a spanning tree over the 5 processes),
    flooding more, upstream's algorithm none of ours."""
    run = run_program(mpi_prefix, mpi_program("revoke/revoke_inter.c"), 5, args=[str(origin)],
                      mpirun_options=VARIANTS[variant], timeout=60)
    ranks = range(5)
    assert run.values("rc", ranks) == {r: REVOKED for r in ranks}, run.describe()
    assert run.values("is_revoked", ranks) == {r: "1" for r in ranks}, run.describe()
    total = sent_total(run, ranks, "sent")
    assert (total == 4 if variant == "lean" else total > 4 if variant == "flood" else total == 0), run.describe()
