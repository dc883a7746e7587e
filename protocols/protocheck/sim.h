/*
 * sim.h - in-process discrete-event simulator that drives the protocol cores
 * (bmg.h, era.h) under controlled schedules, for the protocol checker.
 *
 * A run has P processes, each wrapping one core. Pending events are messages
 * (from, to, bytes), failure notifications (observer learns that a process
 * crashed) and local calls (start a broadcast / an agreement). The scheduler
 * picks the next event:
 *   - random mode: pseudo-randomly from a 64-bit seed (the same seed always
 *     gives the same schedule);
 *   - choice mode (exhaustive exploration): the pending events in creation
 *     order, of which the i-th eligible is taken at step k when choices[k] = i
 *     (0 beyond the given prefix); the run logs how many were eligible at
 *     each step so the explorer can enumerate the alternatives.
 * Messages on one link may overtake at most `link_bound` earlier ones
 * (0 = per-link FIFO). A process crashes right after its crash_at-th action
 * (0: before doing anything; actions are sends, deliveries and decisions);
 * every other process then gets a failure notification, delivered whenever
 * the scheduler picks it. In-flight messages of a crashed process are kept,
 * dropped, or dropped by coin flip (drop_mode 0 / 1 / 2).
 *
 * A process may also stop without crashing (the broadcast only; free_at and
 * fin_at, read by the adapter, not by the simulator): it frees the
 * communicator, or enters MPI_Finalize, right after its d-th delivery (d = 0:
 * from the start). Neither is ever reported by the failure detector. See
 * adapters.h for what each does.
 */
#ifndef FTSLIDE_PROTO_SIM_H
#define FTSLIDE_PROTO_SIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim sim_t;

typedef struct sim_params {
    uint32_t P;
    uint32_t link_bound;    /* UINT32_MAX: unbounded reordering */
    int drop_mode;          /* 0 keep, 1 drop, 2 coin flip per message */
    const int32_t *crash_at; /* P entries, -1 = never; NULL = nobody crashes */
    uint64_t seed;          /* random mode scheduling + adapter randomness */
    int choice_mode;        /* 1: follow `choices`, else random */
    const uint16_t *choices;
    size_t nchoices;
    double fail_bias;       /* random mode: probability of picking a failure notification first */
    uint64_t max_steps;
    int trace;
    /* protocol options */
    int proto_variant;      /* bmg: 0 flood 1 lean; era: 0 uniform 1 early */
    int scenario;           /* bmg: who broadcasts what (see adapters) */
    int ninst;              /* era: agreements per run */
    int check_uniform;      /* era early mode: also require agreement of crashed deciders */
    int random_inputs;      /* era: randomise flags and acknowledged sets */
    int tree;               /* era: era_tree_t (0 binomial, 1 binary heap, 2 4-nomial) */
    int ring_order;         /* era: positions in the folded order of one ring of P (era_set_torus) */
    uint32_t inter_first;   /* era: 0 an intra-communicator (64-bit flags as they are); n1 >= 1 the
                             * members of an inter-communicator: ranks 0..n1-1 the first group, the rest
                             * the second, each contributing a 32-bit int (era_flag_of_int, AND) */
    const int32_t *free_at; /* bmg: P entries, -1 = never, d >= 0: frees the communicator right after
                             * its d-th delivery (0: before anything); NULL = nobody frees */
    const int32_t *fin_at;  /* bmg: the same for entering MPI_Finalize; NULL = nobody finalizes */
    int radix;              /* bmg lean: 0 the core's default, k >= 2, or one of: */
#define SIM_RADIX_STAR (-1)  /* k = P at every process: one level around each origin */
#define SIM_RADIX_MIXED (-2) /* processes differ: P, 2, 4, 3 by rank (random mode: drawn per schedule) */
} sim_params_t;

typedef struct sim_proto {
    const char *name;
    int (*setup)(sim_t *s);
    void (*teardown)(sim_t *s);
    void (*on_local)(sim_t *s, uint32_t rank, uint64_t arg);
    void (*on_msg)(sim_t *s, uint32_t to, uint32_t from, const void *buf, size_t len);
    void (*on_fail)(sim_t *s, uint32_t observer, uint32_t dead);
    void (*check)(sim_t *s); /* at quiescence */
} sim_proto_t;

typedef struct sim_stats {
    uint64_t steps, msgs, crashes;
    size_t nlog;             /* choice mode: steps logged */
    const uint16_t *nopt;    /* eligible events at each step */
    const uint16_t *chosen;  /* index taken at each step */
    uint32_t violations;
    const char *first_violation;
    const uint32_t *nact;    /* actions per process */
    uint32_t frees, finalizes, halts; /* processes that stopped without crashing (sim_note_stop) */
    uint32_t groups_crashed;  /* inter: groups of which every member crashed (sim_note_group) */
    uint32_t groups_unheard;  /* inter: decisions that no member of one group contributed to */
} sim_stats_t;

sim_t *sim_new(void);
void sim_free(sim_t *s);
/* Runs one schedule to quiescence and checks it. Returns the number of
 * violations (0 = all properties hold). */
uint32_t sim_run(sim_t *s, const sim_proto_t *proto, const sim_params_t *prm);
const sim_stats_t *sim_stats(const sim_t *s);

/* ---- for protocol adapters ---- */
const sim_params_t *sim_params(const sim_t *s);
uint32_t sim_nprocs(const sim_t *s);
int sim_dead(const sim_t *s, uint32_t rank);
/* The process performs an action other than a send; returns 1 if it was
 * alive to do it (it may crash right after). */
int sim_act(sim_t *s, uint32_t rank);
/* The process sends (an action). */
void sim_send(sim_t *s, uint32_t from, uint32_t to, const void *buf, size_t len);
void sim_post_local(sim_t *s, uint32_t rank, uint64_t arg);
uint64_t sim_rand(sim_t *s); /* adapter randomness, derived from the seed */
void sim_violation(sim_t *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The adapter reports a process that stopped without crashing (statistics only). */
enum { SIM_STOP_FREE = 1, SIM_STOP_FINALIZE = 2, SIM_STOP_HALT = 3 };
void sim_note_stop(sim_t *s, int kind);
/* The adapter reports an inter-communicator run where a whole group crashed,
 * or a decision without any contributor from one group (statistics only). */
enum { SIM_GROUP_CRASHED = 1, SIM_GROUP_UNHEARD = 2 };
void sim_note_group(sim_t *s, int kind);
void *sim_pdata(const sim_t *s);
void sim_set_pdata(sim_t *s, void *p);

uint64_t sim_splitmix(uint64_t *state);

#endif
