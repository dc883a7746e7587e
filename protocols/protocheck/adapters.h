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
 * Checked at quiescence: every delivered epoch was broadcast; deliveries
 * are strictly increasing at each process; all processes alive at the end
 * end at the same epoch (so if any of them delivered e, all delivered e or
 * higher); if a broadcasting process stays alive, everybody reaches its epoch. */
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
 * acknowledged by some contributor). */
extern const sim_proto_t proto_era;

#endif
