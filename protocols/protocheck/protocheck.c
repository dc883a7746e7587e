/*
 * protocheck - explores failure schedules of the protocol cores and checks
 * their properties (see adapters.h for the properties, sim.h for the model).
 *
 *   protocheck --proto bmg|bmg-lean|era|era-early --p N|A-B
 *              [--exhaustive [--delay-bound B] [--max-frees F] [--max-finalizes G]]
 *              [--inter N1|A-B|any]
 *              [--schedules K | --long] [--seed S | --replay TOKEN] [options]
 *   protocheck --msgcount --p N [--max-ratio R]
 *
 * Exit status: 0 all schedules passed (with --expect-violation: a violation
 * was found and its replay reproduced it), 1 otherwise, 2 usage error.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adapters.h"
#include "bmg.h"
#include "era.h"
#include "sim.h"

#define MAXP_EXH 8
#define MAX_PREFIX 4096

typedef struct opts {
    const char *proto_name;
    const sim_proto_t *proto;
    int variant;
    uint32_t pmin, pmax;
    int exhaustive;
    uint64_t schedules;
    int have_seed;
    uint64_t seed;
    const char *replay;
    uint64_t master_seed;
    uint32_t delay_bound;
    int max_crashes;   /* -1: default */
    int64_t link_bound; /* -1: default (exhaustive 1, random mixed); -2: unbounded */
    int ninst;         /* 0: default */
    double crash_prob; /* <0: mixed */
    int drop_mode;     /* -1: explore / mixed */
    int expect_violation;
    int check_uniform;
    int trace;
    int msgcount;
    double max_ratio;
    int long_mode;
    int stop_first;
    int quiet;
    int crash_margin;
    era_tree_t tree; /* era: shape of the agreement tree */
    int ring_order;  /* era: tree over the folded ring order (era_set_torus with one ring of P) */
    uint32_t inter_lo, inter_hi; /* era: an inter-communicator whose first group has inter_lo..inter_hi
                                  * members (capped at P-1); 0: an intra-communicator */
    const char *inter_spec;      /* the --inter value as given */
    int radix;       /* bmg-lean: 0 the core's default (4), k >= 2, or SIM_RADIX_STAR / SIM_RADIX_MIXED */
    int max_frees;     /* bmg, exhaustive: processes that free the communicator (default 0) */
    int max_fins;      /* bmg, exhaustive: processes that enter MPI_Finalize (default 0) */
    double free_prob;  /* bmg, random: probability that a process frees (<0: mixed) */
    double fin_prob;   /* bmg, random: probability that a process finalizes (<0: mixed) */
    char argv_extra[512]; /* options to repeat in replay commands */
} opts_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: protocheck --proto bmg|bmg-lean|era|era-early --p N|A-B [options]\n"
            "       protocheck --msgcount --p N [--max-ratio R]\n"
            "exploration:\n"
            "  --exhaustive          every crash point of every process (up to --max-crashes crashes),\n"
            "                        both in-flight policies, every schedule within the delay bound\n"
            "  --delay-bound B       exhaustive: total deviations from creation order (default 1)\n"
            "  --schedules K         random exploration: K schedules (default 1000)\n"
            "  --long                random exploration: 100000 schedules, P in 2-256 unless --p\n"
            "  --master-seed M       base seed of the random schedules (default 1)\n"
            "  --seed S              run the single random schedule S (printed with violations)\n"
            "  --replay TOKEN        run the single exhaustive schedule TOKEN (printed with violations)\n"
            "model:\n"
            "  --max-crashes F       at most F crashes per schedule (default: exhaustive 2, random P-1)\n"
            "  --crash-prob X        random: probability that a process crashes (default: mixed per schedule)\n"
            "  --link-bound B|inf    a message may overtake at most B earlier ones on its link\n"
            "                        (default: exhaustive 1, random mixed among 0,1,3,inf)\n"
            "  --drop keep|drop|coin in-flight messages of a crashed process (default: explore / mixed)\n"
            "  --instances N         era: agreements per run (default: exhaustive 2, random 3)\n"
            "  --crash-margin M      exhaustive: crash points go M past the busiest process's actions (default 1)\n"
            "  --tree binomial|binary|knomial4  era: shape of the agreement tree (default binomial)\n"
            "  --ring-order          era: the tree over the torus order of one ring of P (era_set_torus)\n"
            "  --inter N1|A-B|any    era: the members of both groups of an inter-communicator, the first N1\n"
            "                        ranks one group, the rest the other, each contributing a 32-bit int that\n"
            "                        MPIX_Comm_agree ANDs per group; A-B / any (1 to P-1): exhaustive runs\n"
            "                        take every split, random ones draw one per schedule\n"
            "  --radix K|star|mixed  bmg-lean: every process's radix (default 4); star: P, the whole\n"
            "                        communicator in one level, as the revoke on one node; mixed: processes\n"
            "                        differ (P, 2, 4, 3 by rank in exhaustive runs, drawn per schedule else)\n"
            "  --max-frees F         bmg, exhaustive: up to F processes free the communicator, each right\n"
            "                        after each of its deliveries or before anything (default 0)\n"
            "  --max-finalizes G     bmg, exhaustive: up to G processes enter MPI_Finalize, the same points\n"
            "                        (default 0); they halt once every live process is in MPI_Finalize\n"
            "  --free-prob X         bmg, random: probability that a process frees (default: mixed per\n"
            "                        schedule; with only one of these two options the other is 0)\n"
            "  --finalize-prob X     bmg, random: probability that a process enters MPI_Finalize (1: all of\n"
            "                        them, so that they halt)\n"
            "checks and output:\n"
            "  --check-uniform       era-early: also require agreement of processes that crashed after deciding\n"
            "  --expect-violation    succeed only if a violation is found (mutation tests)\n"
            "  --stop-first          stop at the first violation\n"
            "  --trace               print every event (with --seed / --replay)\n"
            "  --quiet               summary table only\n"
            "  --msgcount            failure-free messages per run for every protocol, P = 2^k up to --p\n"
            "  --max-ratio R         with --msgcount: fail unless bmg-lean/bmg <= R at the largest P\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s) return -1;
    *out = strtoull(s, &end, 0);
    return *end ? -1 : 0;
}

static int set_proto(opts_t *o, const char *name)
{
    o->proto_name = name;
    if (!strcmp(name, "bmg")) o->proto = &proto_bmg, o->variant = 0;
    else if (!strcmp(name, "bmg-lean")) o->proto = &proto_bmg, o->variant = 1;
    else if (!strcmp(name, "era")) o->proto = &proto_era, o->variant = 0;
    else if (!strcmp(name, "era-early")) o->proto = &proto_era, o->variant = 1;
    else return -1;
    return 0;
}

static int is_era(const opts_t *o) { return o->proto == &proto_era; }

/* ---- statistics ---------------------------------------------------------- */

typedef struct row {
    uint32_t plo, phi;
    uint64_t configs, schedules, violations, msgs, msgs_max, crashes;
    uint64_t with_free, with_fin, with_halt; /* schedules in which a process freed, finalized, halted */
    uint64_t with_group_crashed, with_group_unheard; /* inter: a whole group crashed; a decision without it */
    double secs;
} row_t;

static void row_add(row_t *r, const sim_stats_t *st)
{
    r->schedules++;
    r->violations += st->violations ? 1 : 0;
    r->msgs += st->msgs;
    if (st->msgs > r->msgs_max) r->msgs_max = st->msgs;
    r->crashes += st->crashes;
    r->with_free += st->frees ? 1 : 0;
    r->with_fin += st->finalizes ? 1 : 0;
    r->with_halt += st->halts ? 1 : 0;
    r->with_group_crashed += st->groups_crashed ? 1 : 0;
    r->with_group_unheard += st->groups_unheard ? 1 : 0;
}

/* One line under the table when processes stopped without crashing. */
static void print_stops(const row_t *r)
{
    if (!r->with_free && !r->with_fin) return;
    printf("stops: %" PRIu64 " schedules with a free, %" PRIu64 " with a finalize, %" PRIu64 " with halted processes\n",
           r->with_free, r->with_fin, r->with_halt);
}

/* One line under the table for an inter-communicator run: how often the
 * cases where a group is gone came up. */
static void print_groups(const opts_t *o, const row_t *r)
{
    if (!o->inter_lo) return;
    printf("inter: %" PRIu64 " of %" PRIu64 " schedules with a whole group crashed, %" PRIu64
           " with a decision that no member of one group contributed to\n",
           r->with_group_crashed, r->schedules, r->with_group_unheard);
}

static void print_header(void)
{
    printf("%-11s %9s %11s %10s %11s %9s %9s %8s\n", "P", "configs", "schedules", "violations", "msgs/run", "max", "crashes", "time(s)");
}

static void print_row(const row_t *r, const char *label)
{
    char pbuf[32];
    if (label) snprintf(pbuf, sizeof pbuf, "%s", label);
    else if (r->plo == r->phi) snprintf(pbuf, sizeof pbuf, "%u", r->plo);
    else snprintf(pbuf, sizeof pbuf, "%u-%u", r->plo, r->phi);
    printf("%-11s %9" PRIu64 " %11" PRIu64 " %10" PRIu64 " %11.1f %9" PRIu64 " %9.2f %8.2f\n", pbuf, r->configs, r->schedules,
           r->violations, r->schedules ? (double)r->msgs / (double)r->schedules : 0.0, r->msgs_max,
           r->schedules ? (double)r->crashes / (double)r->schedules : 0.0, r->secs);
}

static void row_merge(row_t *into, const row_t *r)
{
    into->configs += r->configs;
    into->schedules += r->schedules;
    into->violations += r->violations;
    into->msgs += r->msgs;
    if (r->msgs_max > into->msgs_max) into->msgs_max = r->msgs_max;
    into->crashes += r->crashes;
    into->with_free += r->with_free;
    into->with_fin += r->with_fin;
    into->with_halt += r->with_halt;
    into->with_group_crashed += r->with_group_crashed;
    into->with_group_unheard += r->with_group_unheard;
    into->secs += r->secs;
}

/* ---- random schedules ------------------------------------------------------ */

static uint32_t ilog2(uint32_t x)
{
    uint32_t l = 0;
    while ((1u << (l + 1)) <= x && l < 31) l++;
    return l;
}

/* Everything about random schedule `ss` derives from ss (P from a separate
 * stream, so that --p P --seed S replays a schedule found with a range). */
static void gen_random(const opts_t *o, uint64_t ss, uint32_t P, sim_params_t *prm, int32_t *crash, int32_t *free_at,
                       int32_t *fin_at)
{
    uint64_t st = ss ^ 0x5eed5eed5eedull;
    memset(prm, 0, sizeof *prm);
    prm->P = P;
    prm->seed = ss;
    prm->proto_variant = o->variant;
    prm->tree = o->tree;
    prm->ring_order = o->ring_order;
    prm->radix = o->radix;
    prm->ninst = o->ninst ? o->ninst : 3;
    prm->check_uniform = o->check_uniform;
    prm->random_inputs = 1;
    prm->trace = o->trace;
    prm->scenario = (sim_splitmix(&st) & 1) ? 4 : (int)(sim_splitmix(&st) % 4);
    static const double cps[] = {0.0, 0.05, 0.2, 0.5};
    double cp = o->crash_prob >= 0 ? o->crash_prob : cps[sim_splitmix(&st) % 4];
    uint32_t maxf = o->max_crashes >= 0 ? (uint32_t)o->max_crashes : P - 1;
    uint32_t K = 2 * (ilog2(P) + 2) * (uint32_t)(is_era(o) ? prm->ninst : 1);
    uint32_t nf = 0;
    for (uint32_t r = 0; r < P; r++) {
        double u = (double)(sim_splitmix(&st) >> 11) / 9007199254740992.0;
        /* half of the crash points among the first few actions (every
         * process has those), half anywhere in the run */
        uint64_t k = (sim_splitmix(&st) & 1) ? sim_splitmix(&st) % 4 : sim_splitmix(&st) % (K + 1);
        if (u < cp && nf < maxf) {
            crash[r] = (int32_t)k;
            nf++;
        } else {
            crash[r] = -1;
        }
    }
    prm->crash_at = crash;
    prm->drop_mode = o->drop_mode >= 0 ? o->drop_mode : (int)(sim_splitmix(&st) % 3);
    static const uint32_t lbs[] = {0, 1, 3, UINT32_MAX};
    if (o->link_bound == -2) prm->link_bound = UINT32_MAX;
    else if (o->link_bound >= 0) prm->link_bound = (uint32_t)o->link_bound;
    else prm->link_bound = lbs[sim_splitmix(&st) % 4];
    prm->fail_bias = 0.02 + 0.96 * (double)(sim_splitmix(&st) >> 11) / 9007199254740992.0;
    prm->max_steps = 2000000;
    if (o->inter_lo) {
        /* An inter-communicator: the first group's size from a stream of its
         * own (the draws above stay what they were), and in a quarter of the
         * schedules every member of one group gets a crash point (if the
         * crash bound allows: other crashes then make room). */
        uint64_t st3 = ss ^ 0x17e4c0a9ee11ull;
        uint32_t hi = o->inter_hi < P - 1 ? o->inter_hi : P - 1;
        uint32_t n1 = o->inter_lo + (uint32_t)(sim_splitmix(&st3) % (hi - o->inter_lo + 1));
        prm->inter_first = n1;
        if (sim_splitmix(&st3) % 4 == 0) {
            int second = (int)(sim_splitmix(&st3) & 1);
            uint32_t glo = second ? n1 : 0, ghi = second ? P : n1;
            if (ghi - glo <= maxf) {
                for (uint32_t r = glo; r < ghi; r++)
                    if (crash[r] < 0) {
                        crash[r] = (int32_t)((sim_splitmix(&st3) & 1) ? sim_splitmix(&st3) % 4 : sim_splitmix(&st3) % (K + 1));
                        nf++;
                    }
                for (uint32_t r = 0; r < P && nf > maxf; r++)
                    if ((r < glo || r >= ghi) && crash[r] >= 0) crash[r] = -1, nf--;
            }
        }
    }
    if (is_era(o)) return;
    /* Broadcast: processes that free or finalize, from a stream of their own
     * (the draws above stay what they were). Mixed: a quarter of the
     * schedules without, a quarter with frees, a quarter with some processes
     * in MPI_Finalize, a quarter with all of them (so they halt) and some
     * having freed first. A point is the number of deliveries before the stop. */
    uint64_t st2 = ss ^ 0xf4ee0f1a11ull;
    static const double fps[] = {0.0, 0.3, 0.0, 0.2}, zps[] = {0.0, 0.0, 0.3, 1.0};
    uint64_t mode = sim_splitmix(&st2) % 4;
    double fp = o->free_prob >= 0 || o->fin_prob >= 0 ? (o->free_prob > 0 ? o->free_prob : 0.0) : fps[mode];
    double zp = o->free_prob >= 0 || o->fin_prob >= 0 ? (o->fin_prob > 0 ? o->fin_prob : 0.0) : zps[mode];
    static const int32_t pts[] = {0, 1, 1, 2}; /* mostly right after the first delivery */
    /* (everybody in MPI_Finalize: a point 2 would keep the processes of a
     * one-epoch schedule from ever halting) */
    int all_fin = zp >= 1.0;
    for (uint32_t r = 0; r < P; r++) {
        double u = (double)(sim_splitmix(&st2) >> 11) / 9007199254740992.0;
        double w = (double)(sim_splitmix(&st2) >> 11) / 9007199254740992.0;
        int32_t df = pts[sim_splitmix(&st2) % 4], dz = pts[sim_splitmix(&st2) % (all_fin ? 3 : 4)];
        /* (a process that crashes may enter MPI_Finalize before its crash
         * point: otherwise one crash point never reached would keep every
         * other process from halting) */
        free_at[r] = crash[r] < 0 && u < fp ? df : -1;
        fin_at[r] = w < zp ? dz : -1;
    }
    prm->free_at = free_at;
    prm->fin_at = fin_at;
}

static uint32_t pick_P(const opts_t *o, uint64_t ss)
{
    if (o->pmin == o->pmax) return o->pmin;
    uint64_t st = ss ^ 0x9a9a9a9a9aull;
    double lo = log2((double)o->pmin), hi = log2((double)o->pmax + 0.999);
    double u = (double)(sim_splitmix(&st) >> 11) / 9007199254740992.0;
    uint32_t P = (uint32_t)floor(pow(2.0, lo + u * (hi - lo)));
    if (P < o->pmin) P = o->pmin;
    if (P > o->pmax) P = o->pmax;
    return P;
}

static void print_replay_seed(const opts_t *o, uint32_t P, uint64_t ss)
{
    printf("  replay: protocheck --proto %s --p %u --seed 0x%016" PRIx64 "%s --trace\n", o->proto_name, P, ss, o->argv_extra);
}

static int run_random(const opts_t *o)
{
    sim_t *s = sim_new();
    int32_t *crash = calloc(3 * ((size_t)o->pmax + 1), sizeof *crash);
    if (!s || !crash) return 3;
    int32_t *free_at = crash + o->pmax + 1, *fin_at = free_at + o->pmax + 1;
    enum { NB = 6 };
    static const uint32_t bl[NB] = {2, 5, 17, 65, 257, 1025}, bh[NB] = {4, 16, 64, 256, 1024, UINT32_MAX};
    row_t rows[NB];
    memset(rows, 0, sizeof rows);
    for (int b = 0; b < NB; b++) rows[b].plo = UINT32_MAX;
    uint64_t found = 0, first_seed = 0;
    uint32_t first_P = 0;
    uint64_t n = o->schedules;
    uint64_t ms = o->master_seed;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t st = ms + i * 0x632be59bd9b4e019ull;
        uint64_t ss = sim_splitmix(&st);
        uint32_t P = pick_P(o, ss);
        sim_params_t prm;
        gen_random(o, ss, P, &prm, crash, free_at, fin_at);
        double t0 = now_s();
        uint32_t v = sim_run(s, o->proto, &prm);
        double dt = now_s() - t0;
        int b = 0;
        while (b < NB - 1 && P > bh[b]) b++;
        (void)bl;
        row_add(&rows[b], sim_stats(s));
        rows[b].secs += dt;
        rows[b].configs++;
        if (P < rows[b].plo) rows[b].plo = P;
        if (P > rows[b].phi) rows[b].phi = P;
        if (v) {
            if (!found) first_seed = ss, first_P = P;
            found++;
            if (!o->quiet || found <= 3) {
                printf("VIOLATION proto=%s P=%u seed=0x%016" PRIx64 ": %s\n", o->proto_name, P, ss, sim_stats(s)->first_violation);
                print_replay_seed(o, P, ss);
            }
            if (o->stop_first || o->expect_violation) break;
        }
        if (!o->quiet && n >= 20000 && (i + 1) % (n / 10) == 0) {
            fprintf(stderr, "  ... %" PRIu64 "/%" PRIu64 " schedules, %" PRIu64 " violations\n", i + 1, n, found);
        }
    }
    printf("protocheck: proto=%s mode=random P=%u-%u schedules=%" PRIu64 " master-seed=0x%" PRIx64 "%s%s%s\n",
           o->proto_name, o->pmin, o->pmax, n, ms, is_era(o) ? " tree=" : "", is_era(o) ? era_tree_name(o->tree) : "",
           o->argv_extra);
    print_header();
    row_t all;
    memset(&all, 0, sizeof all);
    for (int b = 0; b < NB; b++) {
        if (!rows[b].schedules) continue;
        print_row(&rows[b], NULL);
        row_merge(&all, &rows[b]);
    }
    print_row(&all, "all");
    print_stops(&all);
    print_groups(o, &all);
    int rc;
    if (found) {
        /* the replay must reproduce the violation */
        sim_params_t prm;
        gen_random(o, first_seed, first_P, &prm, crash, free_at, fin_at);
        uint32_t v = sim_run(s, o->proto, &prm);
        printf("first violation: seed=0x%016" PRIx64 " P=%u; replay %s\n", first_seed, first_P, v ? "reproduces it" : "does NOT reproduce it");
        rc = o->expect_violation ? (v ? 0 : 1) : 1;
    } else {
        rc = o->expect_violation ? 1 : 0;
    }
    printf("result: %s (%" PRIu64 " schedule%s with violations%s)\n", rc == 0 ? "PASS" : "FAIL", found, found == 1 ? "" : "s",
           o->expect_violation ? ", violation expected" : "");
    free(crash);
    sim_free(s);
    return rc;
}

static int run_seed(const opts_t *o)
{
    sim_t *s = sim_new();
    int32_t *crash = calloc(3 * ((size_t)o->pmin + 1), sizeof *crash);
    if (!s || !crash) return 3;
    int32_t *free_at = crash + o->pmin + 1, *fin_at = free_at + o->pmin + 1;
    sim_params_t prm;
    gen_random(o, o->seed, o->pmin, &prm, crash, free_at, fin_at);
    char lb[16];
    if (prm.link_bound == UINT32_MAX) snprintf(lb, sizeof lb, "inf");
    else snprintf(lb, sizeof lb, "%u", prm.link_bound);
    printf("schedule seed=0x%016" PRIx64 " P=%u drop=%s link-bound=%s fail-bias=%.2f%s crashes:", o->seed, o->pmin,
           prm.drop_mode == 0 ? "keep" : prm.drop_mode == 1 ? "drop" : "coin", lb, prm.fail_bias,
           is_era(o) ? "" : (prm.scenario == 4 ? " scenario=random" : " scenario=fixed"));
    for (uint32_t r = 0; r < o->pmin; r++)
        if (crash[r] >= 0) printf(" p%u@%d", r, crash[r]);
    if (prm.inter_first) printf(" groups: p0-p%u | p%u-p%u", prm.inter_first - 1, prm.inter_first, o->pmin - 1);
    if (prm.free_at) {
        printf(" frees:");
        for (uint32_t r = 0; r < o->pmin; r++)
            if (prm.free_at[r] >= 0) printf(" p%u@%d", r, prm.free_at[r]);
        printf(" finalizes:");
        for (uint32_t r = 0; r < o->pmin; r++)
            if (prm.fin_at[r] >= 0) printf(" p%u@%d", r, prm.fin_at[r]);
    }
    printf("\n");
    fflush(stdout);
    uint32_t v = sim_run(s, o->proto, &prm);
    const sim_stats_t *st = sim_stats(s);
    printf("events=%" PRIu64 " messages=%" PRIu64 " crashes=%" PRIu64 " violations=%u%s%s\n", st->steps, st->msgs, st->crashes, v,
           v ? ": " : "", v ? st->first_violation : "");
    int rc = o->expect_violation ? (v ? 0 : 1) : (v ? 1 : 0);
    free(crash);
    sim_free(s);
    return rc;
}

/* ---- exhaustive exploration ------------------------------------------------ */

typedef struct exh {
    const opts_t *o;
    sim_t *s;
    uint32_t P;
    uint32_t link_bound;
    int ninst;
    int32_t crash[MAXP_EXH];
    int32_t free_at[MAXP_EXH], fin_at[MAXP_EXH]; /* bmg: stops without a crash, -1 = none */
    int nfree, nfin;                              /* how many of them are set */
    uint32_t n1;                                  /* era inter-communicator: first group's size (0: intra) */
    uint16_t prefix[MAX_PREFIX];
    row_t row;
    uint64_t found;
    int stop;
    char first_token[1024];
} exh_t;

/* A replay token: "P,scenario,drop,link-bound,instances;" (for an
 * inter-communicator "P,scenario,drop,link-bound,instances,n1;") then one entry per
 * process, "-1" (nothing), "k" (crashes after its k-th action), "f<d>" (frees
 * after its d-th delivery), "x<d>" (enters MPI_Finalize after its d-th
 * delivery) or both letters, then ";" and the choices. */
static void token(char *buf, size_t n, uint32_t P, int scen, int drop, uint32_t lb, int ninst, uint32_t n1,
                  const int32_t *crash, const int32_t *free_at, const int32_t *fin_at, const uint16_t *ch, size_t nch)
{
    size_t off = (size_t)snprintf(buf, n, "%u,%d,%d,%u,%d", P, scen, drop, lb, ninst);
    if (off < n && n1) off += (size_t)snprintf(buf + off, n - off, ",%u", n1);
    if (off < n) off += (size_t)snprintf(buf + off, n - off, ";");
    for (uint32_t r = 0; r < P && off < n; r++) {
        if (r) off += (size_t)snprintf(buf + off, n - off, ",");
        if (off < n && crash[r] < 0 && (free_at[r] >= 0 || fin_at[r] >= 0)) {
            if (free_at[r] >= 0) off += (size_t)snprintf(buf + off, n - off, "f%d", free_at[r]);
            if (off < n && fin_at[r] >= 0) off += (size_t)snprintf(buf + off, n - off, "x%d", fin_at[r]);
        } else if (off < n) {
            off += (size_t)snprintf(buf + off, n - off, "%d", crash[r]);
        }
    }
    if (off < n) off += (size_t)snprintf(buf + off, n - off, ";");
    /* trailing zeros are implied */
    while (nch > 0 && ch[nch - 1] == 0) nch--;
    for (size_t i = 0; i < nch && off < n; i++) off += (size_t)snprintf(buf + off, n - off, "%s%u", i ? "," : "", ch[i]);
}

static int replay_token(const opts_t *o, const char *tok, int verbose);

static void exh_params(const exh_t *x, sim_params_t *prm, int scen, int drop, const uint16_t *ch, size_t nch)
{
    memset(prm, 0, sizeof *prm);
    prm->P = x->P;
    prm->link_bound = x->link_bound;
    prm->drop_mode = drop;
    prm->crash_at = x->crash;
    if (!is_era(x->o)) {
        prm->free_at = x->free_at;
        prm->fin_at = x->fin_at;
    }
    prm->seed = 1;
    prm->choice_mode = 1;
    prm->choices = ch;
    prm->nchoices = nch;
    prm->max_steps = 100000;
    prm->proto_variant = x->o->variant;
    prm->tree = x->o->tree;
    prm->ring_order = x->o->ring_order;
    prm->inter_first = x->n1;
    prm->radix = x->o->radix;
    prm->scenario = scen;
    prm->ninst = x->ninst;
    prm->check_uniform = x->o->check_uniform;
    prm->trace = 0;
}

/* Depth-first over the delay-bounded schedules of one configuration. */
static void exh_config(exh_t *x, int scen, int drop)
{
    const opts_t *o = x->o;
    size_t np = 0;
    x->row.configs++;
    for (;;) {
        sim_params_t prm;
        exh_params(x, &prm, scen, drop, x->prefix, np);
        uint32_t v = sim_run(x->s, o->proto, &prm);
        const sim_stats_t *st = sim_stats(x->s);
        row_add(&x->row, st);
        if (v) {
            x->found++;
            char tok[1024];
            token(tok, sizeof tok, x->P, scen, drop, x->link_bound, x->ninst, x->n1, x->crash, x->free_at, x->fin_at,
                  st->chosen, st->nlog);
            if (x->found == 1) snprintf(x->first_token, sizeof x->first_token, "%s", tok);
            if (!o->quiet || x->found <= 3) {
                printf("VIOLATION proto=%s P=%u: %s\n  replay: protocheck --proto %s --replay '%s'%s --trace\n", o->proto_name,
                       x->P, st->first_violation, o->proto_name, tok, o->argv_extra);
            }
            if (o->stop_first || o->expect_violation) {
                x->stop = 1;
                return;
            }
        }
        /* next schedule: deepest step that can take a later alternative */
        size_t nlog = st->nlog < MAX_PREFIX ? st->nlog : MAX_PREFIX;
        uint32_t cost = 0;
        static uint32_t costs[MAX_PREFIX + 1];
        for (size_t i = 0; i < nlog; i++) {
            costs[i] = cost;
            cost += st->chosen[i];
        }
        size_t i = nlog;
        int next = 0;
        while (i-- > 0) {
            if ((uint32_t)st->chosen[i] + 1 < st->nopt[i] && costs[i] + st->chosen[i] + 1 <= o->delay_bound) {
                for (size_t j = 0; j < i; j++) x->prefix[j] = st->chosen[j];
                x->prefix[i] = (uint16_t)(st->chosen[i] + 1);
                np = i + 1;
                next = 1;
                break;
            }
        }
        if (!next) return;
    }
}

/* Deliveries a process can make in a BMG scenario (distinct epochs). */
static int scen_epochs(int scen) { return scen == 3 ? 2 : 1; }

/* Do the stops (frees, finalizes) make sense in this scenario? A free after
 * the last delivery a process can make changes nothing (it has delivered
 * every epoch; the core keeps running either way); a free or finalize after
 * more deliveries than there are epochs never happens (the same as none). */
static int stops_fit(const exh_t *x, int scen)
{
    int E = scen_epochs(scen);
    for (uint32_t r = 0; r < x->P; r++)
        if (x->free_at[r] >= E || x->fin_at[r] > E) return 0;
    return 1;
}

/* Per process: nothing, a crash after each of its actions, a free or a
 * finalize after each of its deliveries (one stop per process). */
static void exh_crashes(exh_t *x, uint32_t r, int nf, int maxf, uint32_t K)
{
    if (x->stop) return;
    if (r == x->P) {
        int nsc = is_era(x->o) ? 1 : BMG_NSCENARIOS_EXHAUSTIVE;
        for (int scen = 0; scen < nsc && !x->stop; scen++) {
            if ((x->nfree || x->nfin) && !stops_fit(x, scen)) continue;
            if (nf == 0) {
                exh_config(x, scen, 0);
            } else if (x->o->drop_mode >= 0) {
                exh_config(x, scen, x->o->drop_mode);
            } else {
                exh_config(x, scen, 0);
                if (!x->stop) exh_config(x, scen, 1);
            }
        }
        return;
    }
    x->crash[r] = -1;
    exh_crashes(x, r + 1, nf, maxf, K);
    for (uint32_t k = 0; nf < maxf && k <= K && !x->stop; k++) {
        x->crash[r] = (int32_t)k;
        exh_crashes(x, r + 1, nf + 1, maxf, K);
    }
    x->crash[r] = -1;
    /* (points 0..1 for frees, 0..2 for finalizes: scenario 3 has two epochs;
     * stops_fit() drops what a scenario cannot have) */
    for (int32_t d = 0; x->nfree < x->o->max_frees && d < 2 && !x->stop; d++) {
        x->free_at[r] = d;
        x->nfree++;
        exh_crashes(x, r + 1, nf, maxf, K);
        x->nfree--;
    }
    x->free_at[r] = -1;
    for (int32_t d = 0; x->nfin < x->o->max_fins && d <= 2 && !x->stop; d++) {
        x->fin_at[r] = d;
        x->nfin++;
        exh_crashes(x, r + 1, nf, maxf, K);
        x->nfin--;
    }
    x->fin_at[r] = -1;
}

static int run_exhaustive(const opts_t *o)
{
    exh_t x;
    memset(&x, 0, sizeof x);
    x.o = o;
    x.s = sim_new();
    if (!x.s) return 3;
    x.ninst = o->ninst ? o->ninst : 2;
    x.link_bound = o->link_bound == -2 ? UINT32_MAX : o->link_bound >= 0 ? (uint32_t)o->link_bound : 1;
    row_t all;
    memset(&all, 0, sizeof all);
    row_t rows[MAXP_EXH + 1];
    int nrows = 0;
    uint32_t Ks[MAXP_EXH + 1];
    for (uint32_t P = o->pmin; P <= o->pmax && !x.stop; P++) {
        x.P = P;
        for (uint32_t r = 0; r < MAXP_EXH; r++) x.crash[r] = x.free_at[r] = x.fin_at[r] = -1;
        /* crash points: 0 .. (most actions of a process in a failure-free run) + margin */
        uint32_t K = 0;
        int nsc = is_era(o) ? 1 : BMG_NSCENARIOS_EXHAUSTIVE;
        /* (an inter-communicator: every first-group size in the --inter range
         * below P; the split changes the flags, not the messages) */
        uint32_t n1lo = o->inter_lo, n1hi = o->inter_lo ? (o->inter_hi < P - 1 ? o->inter_hi : P - 1) : 0;
        x.n1 = n1lo;
        for (int scen = 0; scen < nsc; scen++) {
            sim_params_t prm;
            exh_params(&x, &prm, scen, 0, NULL, 0);
            sim_run(x.s, o->proto, &prm);
            for (uint32_t r = 0; r < P; r++)
                if (sim_stats(x.s)->nact[r] > K) K = sim_stats(x.s)->nact[r];
        }
        K += (uint32_t)o->crash_margin;
        int maxf = o->max_crashes >= 0 ? o->max_crashes : 2;
        if (maxf > (int)P) maxf = (int)P;
        memset(&x.row, 0, sizeof x.row);
        x.row.plo = x.row.phi = P;
        double t0 = now_s();
        for (x.n1 = n1lo; x.n1 <= n1hi && !x.stop; x.n1++) exh_crashes(&x, 0, 0, maxf, K);
        x.row.secs = now_s() - t0;
        rows[nrows] = x.row;
        Ks[nrows] = K;
        nrows++;
        row_merge(&all, &x.row);
    }
    char lbuf[16], ibuf[32] = "";
    if (x.link_bound == UINT32_MAX) snprintf(lbuf, sizeof lbuf, "inf");
    else snprintf(lbuf, sizeof lbuf, "%u", x.link_bound);
    if (is_era(o)) snprintf(ibuf, sizeof ibuf, " instances=%d", x.ninst);
    if (o->max_frees || o->max_fins)
        snprintf(ibuf, sizeof ibuf, " max-frees=%d max-finalizes=%d", o->max_frees, o->max_fins);
    printf("protocheck: proto=%s mode=exhaustive P=%u-%u delay-bound=%u link-bound=%s max-crashes=%d%s%s%s%s%s\n",
           o->proto_name, o->pmin, o->pmax, o->delay_bound, lbuf, o->max_crashes >= 0 ? o->max_crashes : 2, ibuf,
           is_era(o) ? " tree=" : "", is_era(o) ? era_tree_name(o->tree) : "", o->inter_lo ? " inter=" : "",
           o->inter_lo ? o->inter_spec : "");
    print_header();
    for (int i = 0; i < nrows; i++) {
        print_row(&rows[i], NULL);
        if (!o->quiet) printf("            (crash points 0..%u per process)\n", Ks[i]);
    }
    if (nrows > 1) print_row(&all, "all");
    print_stops(&all);
    print_groups(o, &all);
    int rc = x.found ? (o->expect_violation ? 0 : 1) : (o->expect_violation ? 1 : 0);
    if (x.found) {
        int v = replay_token(o, x.first_token, 0);
        printf("first violation: replay '%s' %s\n", x.first_token, v > 0 ? "reproduces it" : "does NOT reproduce it");
        if (v <= 0) rc = 1;
    }
    printf("result: %s (%" PRIu64 " schedule%s with violations%s)\n", rc == 0 ? "PASS" : "FAIL", x.found, x.found == 1 ? "" : "s",
           o->expect_violation ? ", violation expected" : "");
    sim_free(x.s);
    return rc;
}

/* Runs the exhaustive schedule described by `tok`; returns its number of
 * violations, or -1 if the token is malformed. */
static int replay_token(const opts_t *o, const char *tok, int verbose)
{
    static exh_t x;
    memset(&x, 0, sizeof x);
    x.o = o;
    int scen, drop, ninst, used = 0;
    unsigned P, lb, n1 = 0;
    const char *p = tok;
    if (sscanf(p, "%u,%d,%d,%u,%d%n", &P, &scen, &drop, &lb, &ninst, &used) != 5 || P < 1 || P > MAXP_EXH || ninst < 1 ||
        (p[used] == ',' && (sscanf(p + used, ",%u", &n1) != 1 || n1 < 1 || n1 >= P || !is_era(o))) || !strchr(p, ';')) {
        fprintf(stderr, "protocheck: bad --replay token '%s'\n", p);
        return -1;
    }
    p = strchr(p, ';') + 1;
    for (unsigned r = 0; r < MAXP_EXH; r++) x.crash[r] = x.free_at[r] = x.fin_at[r] = -1;
    for (unsigned r = 0; r < P; r++) {
        char *end;
        if (*p == 'f' || *p == 'x') {
            while (*p == 'f' || *p == 'x') {
                long v = strtol(p + 1, &end, 10);
                if (end == p + 1 || v < 0 || v > 1000) break;
                if (*p == 'f') x.free_at[r] = (int32_t)v;
                else x.fin_at[r] = (int32_t)v;
                p = end;
            }
            end = (char *)p;
        } else {
            long v = strtol(p, &end, 10);
            if (end != p) x.crash[r] = (int32_t)v;
        }
        if (end == p && x.free_at[r] < 0 && x.fin_at[r] < 0) {
            fprintf(stderr, "protocheck: bad crash list in --replay token\n");
            return -1;
        }
        p = end;
        if (*p == ',') p++;
    }
    size_t nch = 0;
    if (*p == ';') p++;
    while (*p && nch < MAX_PREFIX) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p) break;
        x.prefix[nch++] = (uint16_t)v;
        p = end;
        if (*p == ',') p++;
    }
    x.P = P;
    x.n1 = n1;
    x.link_bound = lb;
    x.ninst = ninst;
    x.s = sim_new();
    sim_params_t prm;
    exh_params(&x, &prm, scen, drop, x.prefix, nch);
    prm.trace = verbose && o->trace;
    if (verbose) {
        printf("replay P=%u scenario=%d drop=%d link-bound=%u instances=%d", P, scen, drop, lb, ninst);
        if (n1) printf(" groups: p0-p%u | p%u-p%u", n1 - 1, n1, P - 1);
        printf(" crashes:");
        for (unsigned r = 0; r < P; r++)
            if (x.crash[r] >= 0) printf(" p%u@%d", r, x.crash[r]);
        for (unsigned r = 0; r < P; r++) {
            if (x.free_at[r] >= 0) printf(" p%u frees after %d deliveries;", r, x.free_at[r]);
            if (x.fin_at[r] >= 0) printf(" p%u enters MPI_Finalize after %d deliveries;", r, x.fin_at[r]);
        }
        printf("\n");
        fflush(stdout);
    }
    uint32_t v = sim_run(x.s, o->proto, &prm);
    const sim_stats_t *st = sim_stats(x.s);
    if (verbose)
        printf("events=%" PRIu64 " messages=%" PRIu64 " violations=%u%s%s\n", st->steps, st->msgs, v, v ? ": " : "",
               v ? st->first_violation : "");
    sim_free(x.s);
    return (int)v;
}

static int run_replay(const opts_t *o)
{
    int v = replay_token(o, o->replay, 1);
    if (v < 0) return 2;
    return o->expect_violation ? (v ? 0 : 1) : (v ? 1 : 0);
}

/* ---- message counts ------------------------------------------------------------ */

static uint64_t count_msgs(const sim_proto_t *proto, int variant, uint32_t P, uint64_t *events)
{
    sim_t *s = sim_new();
    sim_params_t prm;
    memset(&prm, 0, sizeof prm);
    prm.P = P;
    prm.link_bound = UINT32_MAX;
    prm.seed = 7;
    prm.proto_variant = variant;
    prm.scenario = 0;
    prm.ninst = 1;
    prm.max_steps = 100000000;
    uint32_t v = sim_run(s, proto, &prm);
    uint64_t m = sim_stats(s)->msgs;
    if (events) *events = sim_stats(s)->steps;
    if (v) printf("  (violation in failure-free run at P=%u: %s)\n", P, sim_stats(s)->first_violation);
    sim_free(s);
    return v ? UINT64_MAX : m;
}

static int run_msgcount(const opts_t *o)
{
    printf("failure-free messages per run (one broadcast from rank 0 / one agreement)\n");
    printf("%6s %6s %9s %10s %10s %12s %10s %10s\n", "P", "degree", "diameter", "bmg", "bmg-lean", "lean/flood", "era", "era-early");
    double ratio = 0;
    int bad = 0;
    uint32_t Ps[40];
    int np = 0;
    for (uint32_t P = 2; P <= o->pmax && np < 38; P *= 2) Ps[np++] = P;
    if (np == 0 || Ps[np - 1] != o->pmax) Ps[np++] = o->pmax;
    for (int i = 0; i < np; i++) {
        uint32_t P = Ps[i];
        uint64_t f = count_msgs(&proto_bmg, 0, P, NULL), l = count_msgs(&proto_bmg, 1, P, NULL);
        uint64_t eu = count_msgs(&proto_era, 0, P, NULL), ee = count_msgs(&proto_era, 1, P, NULL);
        if (f == UINT64_MAX || l == UINT64_MAX || eu == UINT64_MAX || ee == UINT64_MAX) bad = 1;
        ratio = (double)l / (double)f;
        printf("%6u %6u %9u %10" PRIu64 " %10" PRIu64 " %12.4f %10" PRIu64 " %10" PRIu64 "\n", P, bmg_degree(P), bmg_diameter(P), f, l, ratio, eu, ee);
    }
    int rc = bad;
    if (o->max_ratio > 0) {
        int ok = ratio <= o->max_ratio;
        printf("lean/flood at P=%u: %.4f (limit %.4f): %s\n", Ps[np - 1], ratio, o->max_ratio, ok ? "PASS" : "FAIL");
        if (!ok) rc = 1;
    }
    return rc;
}

/* ---- main ------------------------------------------------------------------------ */

static void extra(opts_t *o, const char *a, const char *v)
{
    size_t off = strlen(o->argv_extra);
    snprintf(o->argv_extra + off, sizeof o->argv_extra - off, " %s%s%s", a, v ? " " : "", v ? v : "");
}

int main(int argc, char **argv)
{
    opts_t o;
    memset(&o, 0, sizeof o);
    o.schedules = 1000;
    o.master_seed = 1;
    o.delay_bound = 1;
    o.max_crashes = -1;
    o.link_bound = -1;
    o.crash_prob = -1;
    o.drop_mode = -1;
    o.crash_margin = 1;
    o.free_prob = -1;
    o.fin_prob = -1;
    int have_sched = 0, have_p = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u;
#define NEED_VALUE()                                                    \
    do {                                                                \
        if (!v) {                                                       \
            fprintf(stderr, "protocheck: %s needs a value\n", a);       \
            return 2;                                                   \
        }                                                               \
        i++;                                                            \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--proto")) {
            NEED_VALUE();
            if (set_proto(&o, v)) {
                fprintf(stderr, "protocheck: unknown protocol '%s' (bmg, bmg-lean, era, era-early)\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--p")) {
            NEED_VALUE();
            unsigned lo, hi;
            char dash;
            if (sscanf(v, "%u%c%u", &lo, &dash, &hi) == 3 && dash == '-') {
                o.pmin = lo, o.pmax = hi;
            } else if (parse_u64(v, &u) == 0) {
                o.pmin = o.pmax = (uint32_t)u;
            } else {
                fprintf(stderr, "protocheck: --p takes N or A-B\n");
                return 2;
            }
            have_p = 1;
        } else if (!strcmp(a, "--exhaustive")) {
            o.exhaustive = 1;
        } else if (!strcmp(a, "--delay-bound")) {
            NEED_VALUE();
            if (parse_u64(v, &u)) return usage(stderr), 2;
            o.delay_bound = (uint32_t)u;
        } else if (!strcmp(a, "--schedules")) {
            NEED_VALUE();
            if (parse_u64(v, &u) || u == 0) return usage(stderr), 2;
            o.schedules = u;
            have_sched = 1;
        } else if (!strcmp(a, "--long")) {
            o.long_mode = 1;
        } else if (!strcmp(a, "--master-seed")) {
            NEED_VALUE();
            if (parse_u64(v, &u)) return usage(stderr), 2;
            o.master_seed = u;
        } else if (!strcmp(a, "--seed")) {
            NEED_VALUE();
            if (parse_u64(v, &u)) return usage(stderr), 2;
            o.seed = u;
            o.have_seed = 1;
        } else if (!strcmp(a, "--replay")) {
            NEED_VALUE();
            o.replay = v;
        } else if (!strcmp(a, "--max-crashes")) {
            NEED_VALUE();
            if (parse_u64(v, &u)) return usage(stderr), 2;
            o.max_crashes = (int)u;
            extra(&o, a, v);
        } else if (!strcmp(a, "--crash-prob")) {
            NEED_VALUE();
            o.crash_prob = atof(v);
            extra(&o, a, v);
        } else if (!strcmp(a, "--link-bound")) {
            NEED_VALUE();
            if (!strcmp(v, "inf")) o.link_bound = -2;
            else if (parse_u64(v, &u) == 0) o.link_bound = (int64_t)u;
            else return usage(stderr), 2;
            extra(&o, a, v);
        } else if (!strcmp(a, "--drop")) {
            NEED_VALUE();
            if (!strcmp(v, "keep")) o.drop_mode = 0;
            else if (!strcmp(v, "drop")) o.drop_mode = 1;
            else if (!strcmp(v, "coin")) o.drop_mode = 2;
            else return usage(stderr), 2;
            extra(&o, a, v);
        } else if (!strcmp(a, "--instances")) {
            NEED_VALUE();
            if (parse_u64(v, &u) || u == 0 || u > 100) return usage(stderr), 2;
            o.ninst = (int)u;
            extra(&o, a, v);
        } else if (!strcmp(a, "--tree")) {
            NEED_VALUE();
            if (ERA_OK != era_tree_from_name(v, &o.tree)) {
                fprintf(stderr, "protocheck: unknown tree '%s' (binomial, binary, knomial4)\n", v);
                return 2;
            }
            extra(&o, a, v);
        } else if (!strcmp(a, "--ring-order")) {
            o.ring_order = 1;
            extra(&o, a, NULL);
        } else if (!strcmp(a, "--inter")) {
            NEED_VALUE();
            unsigned lo, hi;
            char dash, tail;
            if (!strcmp(v, "any")) {
                o.inter_lo = 1, o.inter_hi = UINT32_MAX;
            } else if (sscanf(v, "%u%c%u%c", &lo, &dash, &hi, &tail) == 3 && dash == '-' && lo >= 1 && lo <= hi) {
                o.inter_lo = lo, o.inter_hi = hi;
            } else if (parse_u64(v, &u) == 0 && u >= 1 && u < UINT32_MAX) {
                o.inter_lo = o.inter_hi = (uint32_t)u;
            } else {
                fprintf(stderr, "protocheck: --inter takes the first group's size N1 (at least 1), a range A-B or any, "
                                "not '%s'\n", v);
                return 2;
            }
            o.inter_spec = v;
            extra(&o, a, v);
        } else if (!strcmp(a, "--radix")) {
            NEED_VALUE();
            if (!strcmp(v, "star")) o.radix = SIM_RADIX_STAR;
            else if (!strcmp(v, "mixed")) o.radix = SIM_RADIX_MIXED;
            else if (parse_u64(v, &u) == 0 && u >= 2 && u <= UINT32_MAX) o.radix = (int)u;
            else {
                fprintf(stderr, "protocheck: --radix takes a number of at least 2, star or mixed, not '%s'\n", v);
                return 2;
            }
            extra(&o, a, v);
        } else if (!strcmp(a, "--max-frees") || !strcmp(a, "--max-finalizes")) {
            NEED_VALUE();
            if (parse_u64(v, &u) || u > MAXP_EXH) {
                fprintf(stderr, "protocheck: %s takes 0-%d\n", a, MAXP_EXH);
                return 2;
            }
            if (!strcmp(a, "--max-frees")) o.max_frees = (int)u;
            else o.max_fins = (int)u;
        } else if (!strcmp(a, "--free-prob") || !strcmp(a, "--finalize-prob")) {
            NEED_VALUE();
            char *end;
            double x = strtod(v, &end);
            if (*end || x < 0 || x > 1) {
                fprintf(stderr, "protocheck: %s takes a probability (0-1), not '%s'\n", a, v);
                return 2;
            }
            if (!strcmp(a, "--free-prob")) o.free_prob = x;
            else o.fin_prob = x;
            extra(&o, a, v);
        } else if (!strcmp(a, "--crash-margin")) {
            NEED_VALUE();
            if (parse_u64(v, &u)) return usage(stderr), 2;
            o.crash_margin = (int)u;
        } else if (!strcmp(a, "--check-uniform")) {
            o.check_uniform = 1;
            extra(&o, a, NULL);
        } else if (!strcmp(a, "--expect-violation")) {
            o.expect_violation = 1;
        } else if (!strcmp(a, "--stop-first")) {
            o.stop_first = 1;
        } else if (!strcmp(a, "--trace")) {
            o.trace = 1;
        } else if (!strcmp(a, "--quiet")) {
            o.quiet = 1;
        } else if (!strcmp(a, "--msgcount")) {
            o.msgcount = 1;
        } else if (!strcmp(a, "--max-ratio")) {
            NEED_VALUE();
            o.max_ratio = atof(v);
        } else {
            fprintf(stderr, "protocheck: unknown option '%s' (see --help)\n", a);
            return 2;
        }
#undef NEED_VALUE
    }
    if (o.msgcount) {
        if (!have_p) o.pmin = o.pmax = 1024;
        if (o.pmax < 2) return usage(stderr), 2;
        return run_msgcount(&o);
    }
    if (!o.proto) {
        fprintf(stderr, "protocheck: --proto is required (bmg, bmg-lean, era, era-early)\n");
        return 2;
    }
    if (is_era(&o) && (o.max_frees || o.max_fins || o.free_prob >= 0 || o.fin_prob >= 0)) {
        fprintf(stderr, "protocheck: frees and finalizes are modelled for the broadcast only (bmg, bmg-lean)\n");
        return 2;
    }
    if (o.inter_lo && !is_era(&o)) {
        fprintf(stderr, "protocheck: --inter is for the agreement (era, era-early)\n");
        return 2;
    }
    if (o.replay) return run_replay(&o);
    if (o.long_mode) {
        if (!have_sched) o.schedules = 100000;
        if (!have_p) o.pmin = 2, o.pmax = 256, have_p = 1;
    }
    if (!have_p) {
        fprintf(stderr, "protocheck: --p is required\n");
        return 2;
    }
    if (o.pmin < 1 || o.pmax < o.pmin || o.pmax > 4096) {
        fprintf(stderr, "protocheck: --p must be within 1-4096\n");
        return 2;
    }
    if (o.inter_lo && o.pmin <= o.inter_lo) {
        fprintf(stderr, "protocheck: --inter %s leaves no second group at P = %u (every P must exceed the first group)\n",
                o.inter_spec, o.pmin);
        return 2;
    }
    if (o.have_seed) {
        if (o.pmin != o.pmax) {
            fprintf(stderr, "protocheck: --seed needs a single --p (printed with the violation)\n");
            return 2;
        }
        return run_seed(&o);
    }
    if (o.exhaustive) {
        if (o.pmax > MAXP_EXH) {
            fprintf(stderr, "protocheck: --exhaustive supports P <= %d\n", MAXP_EXH);
            return 2;
        }
        return run_exhaustive(&o);
    }
    return run_random(&o);
}
