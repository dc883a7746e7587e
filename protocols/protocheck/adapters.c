/* adapters.c - see adapters.h. */
#include "adapters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmg.h"
#include "era.h"

typedef struct pctx {
    sim_t *s;
    uint32_t rank;
} pctx_t;

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) {
        fprintf(stderr, "protocheck: out of memory\n");
        exit(3);
    }
    return p;
}

static int bget(const uint64_t *b, uint32_t i) { return (int)((b[i >> 6] >> (i & 63u)) & 1u); }
static void bset(uint64_t *b, uint32_t i) { b[i >> 6] |= (uint64_t)1 << (i & 63u); }

/* ========================================================================= */
/* Reliable broadcast                                                         */
/* ========================================================================= */

#define BMG_MAXB 3
#define BMG_MAXD 8

typedef struct bmg_ad {
    bmg_t **core;
    pctx_t *ctx;
    uint32_t nb;
    uint32_t brank[BMG_MAXB];
    uint64_t bepoch[BMG_MAXB];
    int bdone[BMG_MAXB];
    uint64_t *deliv; /* P x BMG_MAXD */
    uint32_t *ndeliv;
    /* processes that stop without crashing (see adapters.h) */
    uint8_t *freed;   /* freed the communicator */
    uint8_t *fin;     /* entered MPI_Finalize */
    uint8_t *halted;  /* finalized for good: does nothing more */
    uint8_t *deaf;    /* the adapter drops its messages and reports (mutants only) */
    uint32_t nfin;
    int all_halted;   /* the halting point has passed */
} bmg_ad_t;

static int bmg_trace(sim_t *s) { return sim_params(s)->trace; }

/* Every process is crashed or in MPI_Finalize: the agreement that our
 * MPI_Finalize runs first can end, so every process in it halts. Checked at
 * each event boundary (crashes happen inside events). */
static void bmg_maybe_halt(sim_t *s, bmg_ad_t *a)
{
    uint32_t P = sim_nprocs(s);
    if (a->all_halted || a->nfin == 0 || a->nfin + sim_stats(s)->crashes < P) return;
    for (uint32_t r = 0; r < P; r++)
        if (!sim_dead(s, r) && !a->fin[r]) return;
    a->all_halted = 1;
    for (uint32_t r = 0; r < P; r++)
        if (!sim_dead(s, r)) {
            a->halted[r] = 1;
            sim_note_stop(s, SIM_STOP_HALT);
        }
    if (bmg_trace(s)) fprintf(stderr, "    ** every live process is in MPI_Finalize: all of them halt\n");
}

/* Stops that fall due after d deliveries of r (d = 0: at the start). */
static void bmg_stops(sim_t *s, bmg_ad_t *a, uint32_t r, uint32_t d)
{
    const sim_params_t *prm = sim_params(s);
    if (prm->free_at && prm->free_at[r] == (int32_t)d && !a->freed[r]) {
        a->freed[r] = 1;
        sim_note_stop(s, SIM_STOP_FREE);
#ifdef BMG_MUTANT_FREED_DROPS
        if (d == 0) a->deaf[r] = 1; /* the old rule: a channel that never delivered is dropped */
#endif
#ifdef BMG_MUTANT_FREED_DEAF
        a->deaf[r] = 2; /* messages still reach the core, failure reports do not */
#endif
        if (prm->trace)
            fprintf(stderr, "      p%u frees the communicator after %u deliveries%s\n", r, d,
                    a->deaf[r] == 1 ? " (channel dropped)" : a->deaf[r] == 2 ? " (channel gets no failure reports)" : "");
    }
    if (prm->fin_at && prm->fin_at[r] == (int32_t)d && !a->fin[r]) {
        a->fin[r] = 1;
        a->nfin++;
        sim_note_stop(s, SIM_STOP_FINALIZE);
        if (prm->trace) fprintf(stderr, "      p%u enters MPI_Finalize after %u deliveries\n", r, d);
#ifdef BMG_MUTANT_FINALIZE_HALTS
        a->halted[r] = 1;
        sim_note_stop(s, SIM_STOP_HALT);
        if (prm->trace) fprintf(stderr, "      p%u halts at once\n", r);
#else
        bmg_maybe_halt(s, a);
#endif
    }
}

static void bmg_cb_send(void *c, uint32_t dest, const void *msg, size_t len)
{
    pctx_t *x = c;
    sim_send(x->s, x->rank, dest, msg, len);
}

static void bmg_cb_deliver(void *c, uint32_t origin, uint64_t epoch)
{
    pctx_t *x = c;
    sim_t *s = x->s;
    bmg_ad_t *a = sim_pdata(s);
    (void)origin;
    if (!sim_act(s, x->rank)) return;
    uint32_t r = x->rank, k = a->ndeliv[r];
    if (k > 0 && a->deliv[(size_t)r * BMG_MAXD + k - 1] >= epoch)
        sim_violation(s, "p%u delivered epoch %llu after epoch %llu", r, (unsigned long long)epoch,
                      (unsigned long long)a->deliv[(size_t)r * BMG_MAXD + k - 1]);
    if (k < BMG_MAXD) a->deliv[(size_t)r * BMG_MAXD + k] = epoch;
    a->ndeliv[r]++;
    /* (the delivery is the last thing the core does in an event: a stop
     * applied here falls on the event boundary) */
    bmg_stops(s, a, r, a->ndeliv[r]);
}

static int bmg_setup(sim_t *s)
{
    const sim_params_t *prm = sim_params(s);
    uint32_t P = prm->P;
    bmg_ad_t *a = xcalloc(1, sizeof *a);
    a->core = xcalloc(P, sizeof *a->core);
    a->ctx = xcalloc(P, sizeof *a->ctx);
    a->deliv = xcalloc((size_t)P * BMG_MAXD, sizeof *a->deliv);
    a->ndeliv = xcalloc(P, sizeof *a->ndeliv);
    a->freed = xcalloc(P, 1);
    a->fin = xcalloc(P, 1);
    a->halted = xcalloc(P, 1);
    a->deaf = xcalloc(P, 1);
    sim_set_pdata(s, a);
    bmg_callbacks_t cb = {bmg_cb_send, bmg_cb_deliver};
    for (uint32_t r = 0; r < P; r++) {
        a->ctx[r].s = s;
        a->ctx[r].rank = r;
        a->core[r] = bmg_create(P, r, prm->proto_variant ? BMG_VARIANT_LEAN : BMG_VARIANT_FLOOD, &cb, &a->ctx[r]);
        if (!a->core[r]) return -1;
    }
    if (prm->proto_variant && prm->radix != 0) {
        const uint32_t mix[4] = {P, 2, 4, 3};
        uint32_t shift = prm->choice_mode ? 0 : (uint32_t)(sim_rand(s) % 4);
        for (uint32_t r = 0; r < P; r++) {
            uint32_t k = prm->radix == SIM_RADIX_STAR ? P : prm->radix == SIM_RADIX_MIXED ? mix[(r + shift) % 4]
                                                                                            : (uint32_t)prm->radix;
            if (bmg_set_radix(a->core[r], k < 2 ? 2 : k) != BMG_OK) return -1;
        }
    }
    switch (prm->scenario) {
    case 0:
        a->nb = 1, a->brank[0] = 0, a->bepoch[0] = 1;
        break;
    case 1:
        a->nb = 1, a->brank[0] = P - 1, a->bepoch[0] = 1;
        break;
    case 2:
        a->nb = 2, a->brank[0] = 0, a->bepoch[0] = 1, a->brank[1] = P - 1, a->bepoch[1] = 1;
        break;
    case 3:
        a->nb = 2, a->brank[0] = 0, a->bepoch[0] = 1, a->brank[1] = P - 1, a->bepoch[1] = 2;
        break;
    default:
        a->nb = 1 + (uint32_t)(sim_rand(s) % BMG_MAXB);
        for (uint32_t i = 0; i < a->nb; i++) {
            a->brank[i] = (uint32_t)(sim_rand(s) % P);
            a->bepoch[i] = 1 + sim_rand(s) % 3;
        }
        break;
    }
    for (uint32_t i = 0; i < a->nb; i++) sim_post_local(s, a->brank[i], i);
    for (uint32_t r = 0; r < P; r++) bmg_stops(s, a, r, 0);
    return 0;
}

static void bmg_teardown(sim_t *s)
{
    bmg_ad_t *a = sim_pdata(s);
    if (!a) return;
    for (uint32_t r = 0; r < sim_nprocs(s); r++) bmg_destroy(a->core[r]);
    free(a->core);
    free(a->ctx);
    free(a->deliv);
    free(a->ndeliv);
    free(a->freed);
    free(a->fin);
    free(a->halted);
    free(a->deaf);
    free(a);
    sim_set_pdata(s, NULL);
}

static void bmg_on_local(sim_t *s, uint32_t rank, uint64_t arg)
{
    bmg_ad_t *a = sim_pdata(s);
    bmg_maybe_halt(s, a);
    if (a->freed[rank] || a->fin[rank]) { /* no revoke on a freed communicator, nor from MPI_Finalize */
        if (bmg_trace(s)) fprintf(stderr, "      p%u has freed or finalized: no broadcast\n", rank);
        return;
    }
    a->bdone[arg] = 1;
    if (bmg_broadcast(a->core[rank], a->bepoch[arg]) != BMG_OK) sim_violation(s, "p%u: bmg_broadcast failed", rank);
}

static void bmg_on_msg(sim_t *s, uint32_t to, uint32_t from, const void *buf, size_t len)
{
    bmg_ad_t *a = sim_pdata(s);
    bmg_maybe_halt(s, a);
    if (a->halted[to] || a->deaf[to] == 1) {
        if (bmg_trace(s)) fprintf(stderr, "      p%u %s: message dropped\n", to, a->halted[to] ? "has halted" : "dropped its channel");
        return;
    }
    int rc = bmg_recv(a->core[to], from, buf, len);
    if (rc != BMG_OK) sim_violation(s, "p%u rejected a message from p%u (rc %d)", to, from, rc);
}

static void bmg_on_fail(sim_t *s, uint32_t observer, uint32_t dead)
{
    bmg_ad_t *a = sim_pdata(s);
    bmg_maybe_halt(s, a);
    if (a->halted[observer] || a->deaf[observer]) {
        if (bmg_trace(s))
            fprintf(stderr, "      p%u %s: report dropped\n", observer, a->halted[observer] ? "has halted" : "gets no reports");
        return;
    }
    if (bmg_failure(a->core[observer], dead) != BMG_OK) sim_violation(s, "p%u: bmg_failure failed", observer);
}

static void bmg_check(sim_t *s)
{
    bmg_ad_t *a = sim_pdata(s);
    uint32_t P = sim_nprocs(s);
    uint64_t top = 0;
    int32_t top_rank = -1;
    for (uint32_t r = 0; r < P; r++) {
        uint32_t k = a->ndeliv[r] < BMG_MAXD ? a->ndeliv[r] : BMG_MAXD;
        for (uint32_t i = 0; i < k; i++) {
            uint64_t e = a->deliv[(size_t)r * BMG_MAXD + i];
            int ok = 0;
            for (uint32_t b = 0; b < a->nb; b++) ok |= a->bdone[b] && a->bepoch[b] == e;
            if (!ok) sim_violation(s, "integrity: p%u delivered epoch %llu that nobody broadcast", r, (unsigned long long)e);
        }
        if (sim_dead(s, r)) continue;
        uint64_t lvl = bmg_epoch(a->core[r]);
        if (lvl > top) top = lvl, top_rank = (int32_t)r;
    }
    /* (the highest epoch of any live core, freed and finalized ones included:
     * a freed core keeps running; once anyone halted, nobody is waiting) */
    for (uint32_t r = 0; r < P; r++) {
        if (sim_dead(s, r) || a->freed[r] || a->fin[r]) continue;
        uint64_t lvl = bmg_epoch(a->core[r]);
        if (lvl != top)
            sim_violation(s, "agreement: alive p%d delivered epoch %llu but waiting p%u ends at epoch %llu", top_rank,
                          (unsigned long long)top, r, (unsigned long long)lvl);
    }
    for (uint32_t b = 0; b < a->nb; b++) {
        if (!a->bdone[b] || sim_dead(s, a->brank[b])) continue;
        for (uint32_t r = 0; r < P; r++) {
            if (sim_dead(s, r) || a->freed[r] || a->fin[r] || bmg_epoch(a->core[r]) >= a->bepoch[b]) continue;
            sim_violation(s, "validity: alive origin p%u broadcast epoch %llu, waiting p%u ends at %llu", a->brank[b],
                          (unsigned long long)a->bepoch[b], r, (unsigned long long)bmg_epoch(a->core[r]));
            break;
        }
    }
}

const sim_proto_t proto_bmg = {"bmg", bmg_setup, bmg_teardown, bmg_on_local, bmg_on_msg, bmg_on_fail, bmg_check};

/* ========================================================================= */
/* Agreement                                                                  */
/* ========================================================================= */

typedef struct era_ad {
    era_t **core;
    pctx_t *ctx;
    uint32_t P;
    size_t W;
    int ninst;
    uint64_t *known;   /* P x W: what each process's failure detector said */
    uint8_t *started;  /* P x (ninst+1) */
    uint64_t *flagin;  /* P x (ninst+1) */
    uint64_t *ackin;   /* P x (ninst+1) x W */
    uint8_t *decided;  /* P x (ninst+1): number of decide() calls */
    uint64_t *dflag;   /* P x (ninst+1) */
    uint8_t *derr;
    uint64_t *dF;      /* P x (ninst+1) x W */
    uint32_t n1;       /* inter-communicator: size of the first group (0: intra) */
    int32_t *intin;    /* inter: P x (ninst+1), the 32-bit int each process contributed */
    uint8_t *kindin;   /* P x (ninst+1): the call kind each process started with */
    uint8_t *dkc;      /* P x (ninst+1): the decided kind_conflict */
} era_ad_t;

/* The call kind (era_start_kind) of process r in instance inst: the last
 * process calls something else in every odd instance (an agree against the
 * others' shrink), so each conflict is decided under every crash point of
 * that process (its kind counts iff it contributed), and the even instances
 * check that equal kinds decide no conflict. Kinds change no message flow,
 * so the explored schedules are the same as without them. */
static uint8_t era_kind_of(const era_ad_t *a, uint32_t r, uint64_t inst)
{
    return (inst % 2 == 1 && r == a->P - 1 && a->P > 1) ? 1 : 0;
}

/* Which group a process belongs to, as era_flag_of_int / era_int_of_flag
 * name it. */
static era_side_t era_side_of(const era_ad_t *a, uint32_t r)
{
    return !a->n1 ? ERA_SIDE_ALL : r < a->n1 ? ERA_SIDE_FIRST : ERA_SIDE_SECOND;
}

#define IX(a, r, s) ((size_t)(r) * (size_t)((a)->ninst + 1) + (size_t)(s))

static void era_cb_send(void *c, uint32_t dest, const void *msg, size_t len)
{
    pctx_t *x = c;
    sim_send(x->s, x->rank, dest, msg, len);
}

static void era_cb_decide(void *c, const era_result_t *res)
{
    pctx_t *x = c;
    sim_t *s = x->s;
    era_ad_t *a = sim_pdata(s);
    uint32_t r = x->rank;
    if (!sim_act(s, r)) return;
    if (res->inst == 0 || res->inst > (uint64_t)a->ninst) {
        sim_violation(s, "p%u decided unknown instance %llu", r, (unsigned long long)res->inst);
        return;
    }
    size_t ix = IX(a, r, res->inst);
    if (a->decided[ix]++) {
        sim_violation(s, "irrevocability: p%u decided instance %llu twice", r, (unsigned long long)res->inst);
        return;
    }
    if (!a->started[ix]) sim_violation(s, "p%u decided instance %llu it never started", r, (unsigned long long)res->inst);
    a->dflag[ix] = res->flag;
    a->derr[ix] = (uint8_t)res->proc_failed;
    a->dkc[ix] = (uint8_t)res->kind_conflict;
    uint64_t *F = &a->dF[ix * a->W];
    memset(F, 0, a->W * sizeof(uint64_t));
    for (uint32_t i = 0; i < res->nfailed; i++) {
        if (res->failed[i] >= a->P || (i && res->failed[i] <= res->failed[i - 1])) {
            sim_violation(s, "p%u: the decided failed set is not an ascending list of ranks", r);
            return;
        }
        bset(F, res->failed[i]);
    }
    if (res->inst < (uint64_t)a->ninst) sim_post_local(s, r, res->inst + 1);
}

static int era_setup(sim_t *s)
{
    const sim_params_t *prm = sim_params(s);
    uint32_t P = prm->P;
    if (prm->inter_first >= P) return -1; /* both groups of an inter-communicator have members */
    era_ad_t *a = xcalloc(1, sizeof *a);
    a->P = P;
    a->W = ((size_t)P + 63u) / 64u;
    a->ninst = prm->ninst > 0 ? prm->ninst : 1;
    size_t slots = (size_t)P * (size_t)(a->ninst + 1);
    a->core = xcalloc(P, sizeof *a->core);
    a->ctx = xcalloc(P, sizeof *a->ctx);
    a->known = xcalloc((size_t)P * a->W, sizeof(uint64_t));
    a->started = xcalloc(slots, 1);
    a->flagin = xcalloc(slots, sizeof(uint64_t));
    a->ackin = xcalloc(slots * a->W, sizeof(uint64_t));
    a->decided = xcalloc(slots, 1);
    a->dflag = xcalloc(slots, sizeof(uint64_t));
    a->derr = xcalloc(slots, 1);
    a->dF = xcalloc(slots * a->W, sizeof(uint64_t));
    a->n1 = prm->inter_first;
    a->intin = xcalloc(slots, sizeof(int32_t));
    a->kindin = xcalloc(slots, 1);
    a->dkc = xcalloc(slots, 1);
    sim_set_pdata(s, a);
    era_callbacks_t cb = {era_cb_send, era_cb_decide};
    for (uint32_t r = 0; r < P; r++) {
        a->ctx[r].s = s;
        a->ctx[r].rank = r;
        a->core[r] = era_create(P, r, prm->proto_variant ? ERA_MODE_EARLY : ERA_MODE_UNIFORM,
                                (era_tree_t)prm->tree, NULL, 0, &cb, &a->ctx[r]);
        if (!a->core[r]) return -1;
        if (prm->ring_order && era_set_torus(a->core[r], &P, 1) != ERA_OK) return -1;
    }
    for (uint32_t r = 0; r < P; r++) sim_post_local(s, r, 1);
    return 0;
}

static void era_teardown(sim_t *s)
{
    era_ad_t *a = sim_pdata(s);
    if (!a) return;
    for (uint32_t r = 0; r < a->P; r++) era_destroy(a->core[r]);
    free(a->core);
    free(a->ctx);
    free(a->known);
    free(a->started);
    free(a->flagin);
    free(a->ackin);
    free(a->decided);
    free(a->dflag);
    free(a->derr);
    free(a->dF);
    free(a->intin);
    free(a->kindin);
    free(a->dkc);
    free(a);
    sim_set_pdata(s, NULL);
}

static void era_on_local(sim_t *s, uint32_t rank, uint64_t inst)
{
    era_ad_t *a = sim_pdata(s);
    const sim_params_t *prm = sim_params(s);
    size_t ix = IX(a, rank, inst);
    uint64_t *ack = &a->ackin[ix * a->W];
    /* Each contributor clears a bit of its own, so the AND shows exactly who
     * contributed (exactly for P <= 64). */
    uint64_t flag = ~((uint64_t)1 << ((rank + 7u * (uint32_t)inst) % 64u));
    memcpy(ack, &a->known[(size_t)rank * a->W], a->W * sizeof(uint64_t));
    if (prm->random_inputs) {
        flag &= ~(sim_rand(s) & sim_rand(s) & sim_rand(s));
        if (sim_rand(s) % 3 == 0) /* leave some known failures unacknowledged */
            for (size_t i = 0; i < a->W; i++) ack[i] &= sim_rand(s);
    }
    if (a->n1) {
        /* An inter-communicator member contributes a 32-bit int, again with a
         * bit of its own cleared (exactly for P <= 32), in its group's half. */
        uint32_t v = ~((uint32_t)1 << ((rank + 7u * (uint32_t)inst) % 32u));
        if (prm->random_inputs) v &= ~(uint32_t)(sim_rand(s) & sim_rand(s) & sim_rand(s));
        a->intin[ix] = (int32_t)v;
        flag = era_flag_of_int(ERA_OP_BAND, era_side_of(a, rank), (int32_t)v);
    }
    a->flagin[ix] = flag;
    a->kindin[ix] = era_kind_of(a, rank, inst);
    a->started[ix] = 1;
    uint32_t *list = xcalloc(a->P ? a->P : 1, sizeof *list), nl = 0;
    for (uint32_t k = a->P; k-- > 0;) /* any order is accepted: give it descending */
        if (bget(ack, k)) list[nl++] = k;
    uint64_t got = 0;
    int rc = era_start_kind(a->core[rank], ERA_OP_BAND, a->kindin[ix], flag, list, nl, &got);
    free(list);
    if (rc == ERA_EPROTO)
        sim_violation(s, "validity: alive p%u cannot start instance %llu: the previous decision lists it as failed", rank,
                      (unsigned long long)inst);
    else if (rc != ERA_OK || got != inst)
        sim_violation(s, "p%u: era_start for instance %llu returned %d (instance %llu)", rank, (unsigned long long)inst, rc,
                      (unsigned long long)got);
}

static void era_on_msg(sim_t *s, uint32_t to, uint32_t from, const void *buf, size_t len)
{
    era_ad_t *a = sim_pdata(s);
    int rc = era_recv(a->core[to], from, buf, len);
    if (rc != ERA_OK) sim_violation(s, "p%u rejected a message from p%u (rc %d)", to, from, rc);
}

static void era_on_fail(sim_t *s, uint32_t observer, uint32_t dead)
{
    era_ad_t *a = sim_pdata(s);
    bset(&a->known[(size_t)observer * a->W], dead);
    if (era_failure(a->core[observer], dead) != ERA_OK) sim_violation(s, "p%u: era_failure failed", observer);
}

static int same_decision(const era_ad_t *a, size_t i, size_t j)
{
    return a->dflag[i] == a->dflag[j] && a->derr[i] == a->derr[j] && a->dkc[i] == a->dkc[j] &&
           memcmp(&a->dF[i * a->W], &a->dF[j * a->W], a->W * sizeof(uint64_t)) == 0;
}

static void era_check_validity(sim_t *s, era_ad_t *a, uint32_t r, int inst)
{
    size_t ix = IX(a, r, inst);
    const uint64_t *F = &a->dF[ix * a->W];
    uint64_t expect_flag = ~(uint64_t)0;
    int expect_err = 0, expect_kc = 0, kind = -1;
    for (uint32_t k = 0; k < a->P; k++) {
        int inF = bget(F, k);
        int wasF = inst > 1 ? bget(&a->dF[IX(a, r, inst - 1) * a->W], k) : 0;
        if (wasF && !inF) {
            sim_violation(s, "validity: p%u instance %d dropped p%u from the failed set", r, inst, k);
            return;
        }
        if (inF && !wasF && !sim_dead(s, k)) {
            sim_violation(s, "validity: p%u instance %d lists alive p%u as failed", r, inst, k);
            return;
        }
        if (inF) continue;
        size_t kx = IX(a, k, inst);
        if (!a->started[kx]) {
            sim_violation(s, "validity: p%u instance %d counts p%u as contributor but it never started", r, inst, k);
            return;
        }
        expect_flag &= a->flagin[kx];
        if (kind >= 0 && kind != a->kindin[kx]) expect_kc = 1;
        kind = a->kindin[kx];
    }
    for (uint32_t k = 0; k < a->P && !expect_err; k++) {
        if (bget(F, k)) continue;
        const uint64_t *ack = &a->ackin[IX(a, k, inst) * a->W];
        for (uint32_t f = 0; f < a->P; f++)
            if (bget(F, f) && !bget(ack, f)) {
                expect_err = 1;
                break;
            }
    }
    if (a->dflag[ix] != expect_flag)
        sim_violation(s, "validity: p%u instance %d flag %016llx, AND of contributors is %016llx", r, inst,
                      (unsigned long long)a->dflag[ix], (unsigned long long)expect_flag);
    if (a->n1) {
        /* what MPIX_Comm_agree returns on an inter-communicator: the AND of
         * the remote group's contributors, all ones when none contributed */
        int mine = r < a->n1 ? 1 : 2;
        uint32_t lo = mine == 1 ? a->n1 : 0, hi = mine == 1 ? a->P : a->n1, ncontrib = 0;
        uint32_t want = UINT32_MAX;
        for (uint32_t k = lo; k < hi; k++)
            if (!bget(F, k)) {
                want &= (uint32_t)a->intin[IX(a, k, inst)];
                ncontrib++;
            }
        uint32_t got = (uint32_t)era_int_of_flag(ERA_OP_BAND, era_side_of(a, r), a->dflag[ix]);
        if (got != want)
            sim_violation(s,
                          "inter validity: p%u (group %d) instance %d gets %08x, the AND of group %d's %u contributor(s) "
                          "is %08x",
                          r, mine, inst, got, 3 - mine, ncontrib, want);
    }
    if (a->derr[ix] != expect_err)
        sim_violation(s, "uniform error: p%u instance %d error %d, rule gives %d", r, inst, a->derr[ix], expect_err);
    if (a->dkc[ix] != expect_kc)
        sim_violation(s, "kind conflict: p%u instance %d decided conflict %d, the contributors' kinds give %d", r, inst,
                      a->dkc[ix], expect_kc);
}

/* Inter-communicator statistics: did a whole group crash, did some decision
 * have no contributor from one group (the other side then gets all ones)? */
static void era_note_groups(sim_t *s, const era_ad_t *a)
{
    int crashed = 0, unheard = 0;
    for (int g = 0; g < 2; g++) {
        uint32_t lo = g ? a->n1 : 0, hi = g ? a->P : a->n1, k = lo;
        while (k < hi && sim_dead(s, k)) k++;
        crashed |= k == hi;
    }
    for (size_t ix = 0; ix < (size_t)a->P * (size_t)(a->ninst + 1) && !unheard; ix++) {
        if (!a->decided[ix]) continue;
        const uint64_t *F = &a->dF[ix * a->W];
        for (int g = 0; g < 2; g++) {
            uint32_t lo = g ? a->n1 : 0, hi = g ? a->P : a->n1, k = lo;
            while (k < hi && bget(F, k)) k++;
            unheard |= k == hi;
        }
    }
    if (crashed) sim_note_group(s, SIM_GROUP_CRASHED);
    if (unheard) sim_note_group(s, SIM_GROUP_UNHEARD);
}

static void era_check(sim_t *s)
{
    era_ad_t *a = sim_pdata(s);
    const sim_params_t *prm = sim_params(s);
    int strict = prm->proto_variant == 0 || prm->check_uniform;
    if (a->n1) era_note_groups(s, a);
    if (prm->proto_variant == 0)
        for (uint32_t r = 0; r < a->P; r++)
            if (era_rejected(a->core[r]))
                sim_violation(s, "p%u ignored %llu message(s) built on a different previous decision (impossible in uniform mode)", r,
                              (unsigned long long)era_rejected(a->core[r]));
    for (int inst = 1; inst <= a->ninst; inst++) {
        int64_t ref = -1;
        for (uint32_t r = 0; r < a->P; r++) {
            if (sim_dead(s, r)) continue;
            if (!a->decided[IX(a, r, inst)]) {
                sim_violation(s, "termination: alive p%u did not decide instance %d", r, inst);
                return;
            }
            if (ref < 0) ref = r;
        }
        for (uint32_t r = 0; r < a->P && ref < 0; r++)
            if (a->decided[IX(a, r, inst)]) ref = r;
        if (ref < 0) continue;
        for (uint32_t r = 0; r < a->P; r++) {
            size_t ix = IX(a, r, inst);
            if (!a->decided[ix]) continue;
            era_check_validity(s, a, r, inst);
            if (!same_decision(a, ix, IX(a, ref, inst)) && (strict || !sim_dead(s, r))) {
                sim_violation(s,
                              "%sagreement: instance %d: p%u%s decided flag %016llx err %d conflict %d, p%lld decided "
                              "flag %016llx err %d conflict %d",
                              sim_dead(s, r) ? "uniform " : "", inst, r, sim_dead(s, r) ? " (crashed later)" : "",
                              (unsigned long long)a->dflag[ix], a->derr[ix], a->dkc[ix], (long long)ref,
                              (unsigned long long)a->dflag[IX(a, ref, inst)], a->derr[IX(a, ref, inst)],
                              a->dkc[IX(a, ref, inst)]);
            }
        }
    }
}

const sim_proto_t proto_era = {"era", era_setup, era_teardown, era_on_local, era_on_msg, era_on_fail, era_check};
