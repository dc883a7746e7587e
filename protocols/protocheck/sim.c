/* sim.c - see sim.h. */
#include "sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EV_MSG = 1, EV_FAIL = 2, EV_LOCAL = 3 };

typedef struct ev {
    uint8_t kind;
    uint32_t from, to; /* EV_FAIL: from = the dead process, to = observer */
    uint64_t seq;      /* creation order */
    uint32_t lseq;     /* per-link order (EV_MSG) */
    uint64_t arg;
    uint32_t len;
    unsigned char *buf;
} ev_t;

struct sim {
    const sim_proto_t *proto;
    sim_params_t prm;
    uint32_t P;
    /* processes */
    uint8_t *dead;
    uint32_t *nact;
    int32_t *crash_at;
    uint32_t *crash_pending;
    uint32_t ncrash_pending;
    /* events */
    ev_t *pend;
    size_t npend, cap;
    uint64_t seq;
    uint32_t *link_lseq;  /* P*P */
    uint32_t *link_npend; /* P*P */
    size_t link_cap;
    /* randomness */
    uint64_t rng_sched, rng_adapt;
    /* logs */
    uint16_t *nopt, *chosen;
    size_t logcap;
    sim_stats_t st;
    char first[512];
    void *pdata;
    size_t pcap;
};

uint64_t sim_splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

sim_t *sim_new(void) { return calloc(1, sizeof(sim_t)); }

static void free_pending(sim_t *s)
{
    for (size_t i = 0; i < s->npend; i++) free(s->pend[i].buf);
    s->npend = 0;
}

void sim_free(sim_t *s)
{
    if (!s) return;
    free_pending(s);
    free(s->pend);
    free(s->dead);
    free(s->nact);
    free(s->crash_at);
    free(s->crash_pending);
    free(s->link_lseq);
    free(s->link_npend);
    free(s->nopt);
    free(s->chosen);
    free(s);
}

const sim_stats_t *sim_stats(const sim_t *s) { return &s->st; }
const sim_params_t *sim_params(const sim_t *s) { return &s->prm; }
uint32_t sim_nprocs(const sim_t *s) { return s->P; }
int sim_dead(const sim_t *s, uint32_t r) { return s->dead[r]; }
void *sim_pdata(const sim_t *s) { return s->pdata; }
void sim_set_pdata(sim_t *s, void *p) { s->pdata = p; }
uint64_t sim_rand(sim_t *s) { return sim_splitmix(&s->rng_adapt); }

void sim_note_stop(sim_t *s, int kind)
{
    if (kind == SIM_STOP_FREE) s->st.frees++;
    else if (kind == SIM_STOP_FINALIZE) s->st.finalizes++;
    else if (kind == SIM_STOP_HALT) s->st.halts++;
}

void sim_note_group(sim_t *s, int kind)
{
    if (kind == SIM_GROUP_CRASHED) s->st.groups_crashed++;
    else if (kind == SIM_GROUP_UNHEARD) s->st.groups_unheard++;
}

void sim_violation(sim_t *s, const char *fmt, ...)
{
    if (s->st.violations++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->first, sizeof s->first, fmt, ap);
        va_end(ap);
        s->st.first_violation = s->first;
    }
    if (s->prm.trace) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "  !! violation: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    }
}

static void die_oom(void)
{
    fprintf(stderr, "protocheck: out of memory\n");
    exit(3);
}

static ev_t *push_event(sim_t *s)
{
    if (s->npend == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->pend = realloc(s->pend, s->cap * sizeof *s->pend);
        if (!s->pend) die_oom();
    }
    ev_t *e = &s->pend[s->npend++];
    memset(e, 0, sizeof *e);
    e->seq = s->seq++;
    return e;
}

/* Removes pending event i, keeping creation order in choice mode. */
static void remove_event(sim_t *s, size_t i)
{
    ev_t *e = &s->pend[i];
    if (e->kind == EV_MSG) s->link_npend[(size_t)e->from * s->P + e->to]--;
    free(e->buf);
    if (s->prm.choice_mode) {
        memmove(&s->pend[i], &s->pend[i + 1], (s->npend - i - 1) * sizeof *s->pend);
    } else {
        s->pend[i] = s->pend[s->npend - 1];
    }
    s->npend--;
}

static void crash_mark(sim_t *s, uint32_t r)
{
    if (s->dead[r]) return;
    s->dead[r] = 1;
    s->crash_pending[s->ncrash_pending++] = r;
    s->st.crashes++;
}

/* Counts an action of r; returns 1 if r was alive. Crashes r right after
 * its crash_at-th action. */
static int action(sim_t *s, uint32_t r)
{
    if (s->dead[r]) return 0;
    s->nact[r]++;
    if (s->crash_at[r] >= 0 && s->nact[r] == (uint32_t)s->crash_at[r]) crash_mark(s, r);
    return 1;
}

int sim_act(sim_t *s, uint32_t r)
{
    int alive = action(s, r);
    if (alive && s->prm.trace) fprintf(stderr, "      p%u acts (#%u)%s\n", r, s->nact[r], s->dead[r] ? " and crashes" : "");
    return alive;
}

void sim_send(sim_t *s, uint32_t from, uint32_t to, const void *buf, size_t len)
{
    if (s->dead[from]) return;
    if (to >= s->P || to == from) {
        sim_violation(s, "p%u sent a message to invalid rank %u", from, to);
        return;
    }
    ev_t *e = push_event(s);
    e->kind = EV_MSG;
    e->from = from;
    e->to = to;
    e->lseq = s->link_lseq[(size_t)from * s->P + to]++;
    s->link_npend[(size_t)from * s->P + to]++;
    e->len = (uint32_t)len;
    e->buf = malloc(len ? len : 1);
    if (!e->buf) die_oom();
    memcpy(e->buf, buf, len);
    s->st.msgs++;
    if (s->prm.trace) fprintf(stderr, "      p%u -> p%u (%zu bytes, type %u)\n", from, to, len, len > 2 ? ((const unsigned char *)buf)[2] : 0);
    action(s, from);
}

void sim_post_local(sim_t *s, uint32_t rank, uint64_t arg)
{
    if (s->dead[rank]) return;
    ev_t *e = push_event(s);
    e->kind = EV_LOCAL;
    e->to = rank;
    e->arg = arg;
}

/* Applies the crashes marked during the last event. */
static void crash_flush(sim_t *s)
{
    for (uint32_t k = 0; k < s->ncrash_pending; k++) {
        uint32_t r = s->crash_pending[k];
        if (s->prm.trace) fprintf(stderr, "    ** p%u crashes after %u actions\n", r, s->nact[r]);
        for (size_t i = 0; i < s->npend;) {
            ev_t *e = &s->pend[i];
            int drop = e->to == r;
            if (!drop && e->kind == EV_MSG && e->from == r) {
                if (s->prm.drop_mode == 1) drop = 1;
                else if (s->prm.drop_mode == 2) drop = (int)(sim_splitmix(&s->rng_sched) & 1u);
            }
            if (drop) remove_event(s, i);
            else i++;
        }
        for (uint32_t q = 0; q < s->P; q++) {
            if (q == r || s->dead[q]) continue;
            ev_t *e = push_event(s);
            e->kind = EV_FAIL;
            e->from = r;
            e->to = q;
        }
    }
    s->ncrash_pending = 0;
}

/* Is pending message i allowed to overtake the earlier ones on its link? */
static int link_ok(const sim_t *s, size_t i, size_t *earliest)
{
    const ev_t *e = &s->pend[i];
    *earliest = i;
    if (e->kind != EV_MSG) return 1;
    size_t link = (size_t)e->from * s->P + e->to;
    if (s->prm.link_bound == UINT32_MAX || s->link_npend[link] <= (size_t)s->prm.link_bound + 1) return 1;
    uint32_t before = 0, best = e->lseq;
    for (size_t j = 0; j < s->npend; j++) {
        const ev_t *o = &s->pend[j];
        if (o->kind != EV_MSG || o->from != e->from || o->to != e->to) continue;
        if (o->lseq < e->lseq) before++;
        if (o->lseq < best) {
            best = o->lseq;
            *earliest = j;
        }
    }
    return before <= s->prm.link_bound;
}

static void log_choice(sim_t *s, size_t nopt, size_t c)
{
    if (s->st.nlog == s->logcap) {
        s->logcap = s->logcap ? 2 * s->logcap : 1024;
        s->nopt = realloc(s->nopt, s->logcap * sizeof *s->nopt);
        s->chosen = realloc(s->chosen, s->logcap * sizeof *s->chosen);
        if (!s->nopt || !s->chosen) die_oom();
    }
    s->nopt[s->st.nlog] = (uint16_t)(nopt > 65535 ? 65535 : nopt);
    s->chosen[s->st.nlog] = (uint16_t)c;
    s->st.nlog++;
}

/* Picks the index of the next event to run. */
static size_t pick(sim_t *s)
{
    size_t earliest;
    if (s->prm.choice_mode) {
        /* eligible events in creation order */
        size_t nel = 0, want = 0, idx = 0;
        size_t step = s->st.nlog;
        if (step < s->prm.nchoices) want = s->prm.choices[step];
        for (size_t i = 0; i < s->npend; i++) {
            if (!link_ok(s, i, &earliest)) continue;
            if (nel == want) idx = i;
            nel++;
        }
        if (want >= nel) { /* stale prefix: fall back to the first */
            want = 0;
            for (size_t i = 0; i < s->npend; i++)
                if (link_ok(s, i, &earliest)) {
                    idx = i;
                    break;
                }
        }
        log_choice(s, nel, want);
        return idx;
    }
    size_t i = (size_t)(sim_splitmix(&s->rng_sched) % s->npend);
    if (s->prm.fail_bias > 0) {
        /* choose the class first so detection is sometimes slow, sometimes fast */
        double u = (double)(sim_splitmix(&s->rng_sched) >> 11) / 9007199254740992.0;
        int want_fail = u < s->prm.fail_bias;
        for (size_t tries = 0; tries < 8 && ((s->pend[i].kind == EV_FAIL) != want_fail); tries++)
            i = (size_t)(sim_splitmix(&s->rng_sched) % s->npend);
    }
    if (!link_ok(s, i, &earliest)) i = earliest;
    return i;
}

static void grow_arrays(sim_t *s, uint32_t P)
{
    if (P > s->pcap) {
        free(s->dead);
        free(s->nact);
        free(s->crash_at);
        free(s->crash_pending);
        s->dead = calloc(P, 1);
        s->nact = calloc(P, sizeof *s->nact);
        s->crash_at = calloc(P, sizeof *s->crash_at);
        s->crash_pending = calloc(P, sizeof *s->crash_pending);
        if (!s->dead || !s->nact || !s->crash_at || !s->crash_pending) die_oom();
        s->pcap = P;
    }
    size_t links = (size_t)P * P;
    if (links > s->link_cap) {
        free(s->link_lseq);
        free(s->link_npend);
        s->link_lseq = calloc(links, sizeof *s->link_lseq);
        s->link_npend = calloc(links, sizeof *s->link_npend);
        if (!s->link_lseq || !s->link_npend) die_oom();
        s->link_cap = links;
    }
}

uint32_t sim_run(sim_t *s, const sim_proto_t *proto, const sim_params_t *prm)
{
    uint32_t P = prm->P;
    free_pending(s);
    grow_arrays(s, P);
    s->proto = proto;
    s->prm = *prm;
    s->P = P;
    memset(s->dead, 0, P);
    memset(s->nact, 0, P * sizeof *s->nact);
    memset(s->link_lseq, 0, (size_t)P * P * sizeof *s->link_lseq);
    memset(s->link_npend, 0, (size_t)P * P * sizeof *s->link_npend);
    for (uint32_t r = 0; r < P; r++) s->crash_at[r] = prm->crash_at ? prm->crash_at[r] : -1;
    s->ncrash_pending = 0;
    s->seq = 0;
    uint64_t st = prm->seed;
    s->rng_sched = sim_splitmix(&st);
    s->rng_adapt = sim_splitmix(&st);
    memset(&s->st, 0, sizeof s->st);
    s->first[0] = 0;
    s->pdata = NULL;

    if (proto->setup(s) != 0) {
        sim_violation(s, "setup failed");
        return s->st.violations;
    }
    for (uint32_t r = 0; r < P; r++)
        if (s->crash_at[r] == 0) crash_mark(s, r);
    crash_flush(s);

    uint64_t max_steps = prm->max_steps ? prm->max_steps : 1000000;
    while (s->npend > 0) {
        if (s->st.steps >= max_steps) {
            sim_violation(s, "no quiescence after %llu events (livelock?)", (unsigned long long)s->st.steps);
            break;
        }
        size_t i = pick(s);
        ev_t e = s->pend[i];
        s->pend[i].buf = NULL; /* ownership moves to e */
        remove_event(s, i);
        s->st.steps++;
        if (s->dead[e.to]) { /* cannot happen: events to the dead are removed */
            free(e.buf);
            continue;
        }
        switch (e.kind) {
        case EV_MSG:
            if (prm->trace) fprintf(stderr, "  [%llu] p%u receives from p%u\n", (unsigned long long)s->st.steps, e.to, e.from);
            proto->on_msg(s, e.to, e.from, e.buf, e.len);
            break;
        case EV_FAIL:
            if (prm->trace) fprintf(stderr, "  [%llu] p%u learns p%u crashed\n", (unsigned long long)s->st.steps, e.to, e.from);
            proto->on_fail(s, e.to, e.from);
            break;
        case EV_LOCAL:
            if (prm->trace) fprintf(stderr, "  [%llu] p%u local call %llu\n", (unsigned long long)s->st.steps, e.to, (unsigned long long)e.arg);
            proto->on_local(s, e.to, e.arg);
            break;
        }
        free(e.buf);
        crash_flush(s);
    }
    if (s->npend == 0) proto->check(s);
    free_pending(s);
    proto->teardown(s);
    s->st.nopt = s->nopt;
    s->st.chosen = s->chosen;
    s->st.nact = s->nact;
    return s->st.violations;
}
