/* adapters.h - the cores as simulator protocols, with their property checks. */
#ifndef FTSLIDE_PROTO_ADAPTERS_H
#define FTSLIDE_PROTO_ADAPTERS_H

#include "sim.h"

/* Reliable broadcast (bmg.h). prm->proto_variant: 0 flooding, 1 lean.
 * prm->scenario:
 *   0  rank 0 broadcasts epoch 1
 *   1  rank P-1 broadcasts epoch 1
 *   2  ranks 0 and P-1 both broadcast epoch 1 (concurrent revokes)
 *   3  rank 0 broadcasts epoch 1 while rank P-1 broadcasts epoch 2
 *   4  random: 1..3 broadcasts from random ranks, epochs in 1..3
 * Processes that stop without crashing (prm->free_at, prm->fin_at; never
 * reported by the failure detector):
 *   free      the process is no longer a delivering member: its channel is
 *             kept (detached), its core keeps receiving, forwarding and
 *             processing failure reports, its deliveries are no longer
 *             required (nor seen by the application); a broadcast it had
 *             not started yet is not started.
 *   finalize  the process enters MPI_Finalize: the same as free, and it
 *             halts (receives nothing more, forwards nothing more, processes
 *             no failure report) once every process has crashed or entered
 *             MPI_Finalize (our MPI_Finalize first runs an agreement over all
 *             live processes of MPI_COMM_WORLD). All of them halt together,
 *             at the first event boundary where that holds: the earliest
 *             moment the real agreement could let any of them go.
 * A process is "waiting" if it neither crashed, nor freed, nor entered
 * MPI_Finalize. Checked at quiescence: every delivered epoch was broadcast;
 * deliveries are strictly increasing at each process; every waiting process
 * ends at the highest epoch any live (not crashed) process holds (so if a live
 * process delivered e, every waiting one delivered e or higher); if a
 * broadcasting process stays alive, every waiting process reaches its epoch.
 *
 * Mutants of the adapter model (compiled into test binaries only):
 *   BMG_MUTANT_FREED_DROPS      the older adapter rule (a freed channel is
 *                               kept only if it had delivered): a process that
 *                               frees before it delivered anything drops every
 *                               later message and failure report.
 *   BMG_MUTANT_FREED_DEAF       a freed process keeps forwarding messages but
 *                               gets no failure reports (a detached channel
 *                               not fed from MPI_COMM_WORLD).
 *   BMG_MUTANT_FINALIZE_HALTS   a process halts as soon as it enters
 *                               MPI_Finalize (no agreement first). */
extern const sim_proto_t proto_bmg;
#define BMG_NSCENARIOS_EXHAUSTIVE 4

/* Agreement (era.h). prm->proto_variant: 0 uniform, 1 early; prm->ninst
 * agreements in sequence. Checked at quiescence, per instance:
 * termination (every process alive at the end decided every instance),
 * irrevocability (one decision per process per instance), agreement (all
 * deciders, or in early mode all deciders alive at the end, decide the same
 * flag, error and failed set), validity (the failed set contains the
 * previous one and otherwise only crashed processes; every other process
 * contributed; flag = AND of their flags; error = some failed process is not
 * acknowledged by some contributor; kind conflict = the contributors'
 * call kinds differ, where the last process starts every odd instance
 * with another kind than the others, so agreement covers that bit too).
 * Inter-communicator (prm->inter_first = n1 >= 1): ranks 0..n1-1 are the
 * first group, n1..P-1 the second; each process contributes a 32-bit int
 * through era_flag_of_int(ERA_OP_BAND, its side, int), and besides the
 * checks above, inter validity: every decider gets, through
 * era_int_of_flag(ERA_OP_BAND, its side, flag), exactly the AND of the ints
 * of the other group's contributors (all ones if none of them contributed). */
extern const sim_proto_t proto_era;

#endif
