// ftproto_sim - SimGrid s4u driver for the protocol cores (bmg.h, era.h).
//
// One actor per process, placed on host h<rank> of the platform. The cores are
// used unchanged: their send() callback becomes a detached put on the
// destination's mailbox with the message's byte size (so the network model
// charges it), every received message is fed to bmg_recv()/era_recv(), and
// every crash is reported to every live process by bmg_failure()/era_failure()
// `--detect` seconds after it happened.
//
// A crash at time <= 0 is a crash before the operation: that actor never
// runs. A crash at time t > 0 kills the actor at t (messages it had already
// handed to the network still arrive). The run ends at quiescence: every
// live process has decided (delivered), no message to a live process is in
// flight and every crash has been reported. One JSON line summarises it.
//
// Usage: ftproto_sim PLATFORM.xml --proto era|era-early|bmg|bmg-lean|allreduce
//        --p N [--crash RANK@TIME]... [--adversary F] [--detect SEC] [--root R]
//        [--tree binomial|binary|knomial4] [--torus-order AxBxC] [--dump]
//        [--cfg=...]
//
// --adversary F (agreement only): the current root (era_root(): the lowest live
// rank, or the lowest in the torus order with --torus-order) is
// killed the moment it decides, F times, so that every such failure is
// discovered during the operation.
#include <simgrid/s4u.hpp>
#include <sys/resource.h>
#include <xbt/log.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

extern "C" {
#include "bmg.h"
#include "era.h"
}

namespace sg4 = simgrid::s4u;

namespace {

enum class Proto { Era, EraEarly, Bmg, BmgLean, Allreduce };

constexpr uint32_t WAKE = 0xffffffffu; // sender of a waker's empty message

struct Msg {
    uint32_t from;
    std::vector<unsigned char> bytes;
};

struct Crash {
    uint32_t rank;
    double time;
};

struct Decision {
    bool done = false;
    double time = 0;
    uint64_t flag = 0;
    int err = 0;
    std::vector<uint32_t> failed; // ascending ranks
};

struct Global {
    Proto proto = Proto::Era;
    uint32_t P = 0;
    double detect = 1e-6;
    uint32_t root = 0; // broadcaster (bmg)
    era_tree_t tree = ERA_TREE_BINOMIAL;
    std::vector<uint32_t> torus; // --torus-order: the agreement tree over the folded torus order
    bool dump = false;
    std::vector<Crash> crashes;      // sorted by time
    std::vector<double> crash_at;    // per rank, +inf if never
    std::vector<char> crashed;       // per rank: actor gone
    std::vector<sg4::Mailbox *> mbox;
    std::vector<sg4::Host *> mbox_host;
    std::vector<Decision> dec;
    std::vector<era_t *> era; // per rank: its agreement core (adversary)
    std::vector<uint64_t> inflight_to; // messages in flight to each rank
    std::vector<std::vector<sg4::CommPtr>> out; // per rank: its sends not known complete
    uint64_t inflight = 0;             // ... to ranks that are not crashed
    uint64_t sent = 0, bytes = 0;
    uint64_t sent_at_last_decision = 0;
    std::vector<size_t> next;  // per rank: index of the next crash to report
    int64_t reports_pending = 0; // (live process, crash) pairs not reported yet
    uint32_t running = 0, started = 0;
    uint32_t adversary = 0;     // crashes left for the root-killing adversary
    bool finished = false;
    double finish_time = 0;
    sg4::Mailbox *ctl = nullptr;
    std::vector<double> dyn_crash_time; // crashes during the run, in order (wakers)
    bool wakers_started = false;
    sg4::MutexPtr crash_mutex;
    sg4::ConditionVariablePtr crash_cv;
};

Global G;

double now() { return sg4::Engine::get_clock(); }

void post(uint32_t from, uint32_t dest, const void *buf, size_t len)
{
    if (G.crashed[from]) return; // crashed in the middle of a step: the rest is lost
    auto *m = new Msg{from, std::vector<unsigned char>(static_cast<const unsigned char *>(buf),
                                                       static_cast<const unsigned char *>(buf) + len)};
    G.sent++;
    G.bytes += len;
    if (!G.crashed[dest]) {
        G.inflight_to[dest]++;
        G.inflight++;
    }
    G.out[from].push_back(G.mbox[dest]->put_async(m, len));
}

// Called after every event: end the run once nothing can happen any more.
void check_quiescence()
{
    if (G.finished || G.started < G.running || G.inflight != 0 || G.reports_pending != 0) return;
    G.finished = true;
    G.finish_time = now();
    G.ctl->put_init(new int(0), 0)->detach();
}

struct Ctx {
    uint32_t rank;
};

// Waker of process r: for every crash that happens during the run, an empty
// message to r `detect` seconds after it (r then applies the report).
void waker(uint32_t r)
{
    sg4::Actor::self()->daemonize();
    std::unique_lock<sg4::Mutex> lock(*G.crash_mutex);
    for (size_t seen = 0;; seen++) {
        while (seen == G.dyn_crash_time.size()) G.crash_cv->wait(lock);
        const double due = G.dyn_crash_time[seen] + G.detect;
        lock.unlock();
        sg4::this_actor::sleep_until(due);
        if (G.crashed[r]) return;
        // A blocking put, not a detached one: SimGrid 3.32 finishes a
        // detached comm whose sender has exited by scanning a list of such
        // comms.
        G.mbox[r]->put(new Msg{WAKE, {}}, 0);
        lock.lock();
    }
}

// Process `me` crashes now: it stops sending, its undelivered messages are
// lost, and every other live process learns of it `detect` seconds later.
void crash(uint32_t me, bool add_entry)
{
    if (G.crashed[me]) return;
    G.crashed[me] = 1;
    G.running--;
    G.inflight -= G.inflight_to[me];
    G.inflight_to[me] = 0;
    // Reports this process will never make (its own crash is not reported to it).
    G.reports_pending -= static_cast<int64_t>(G.crashes.size() - G.next[me]) - (add_entry ? 0 : 1);
    if (add_entry) {
        Crash c{me, now()};
        auto it = std::upper_bound(G.crashes.begin(), G.crashes.end(), c, [](const Crash &x, const Crash &y) {
            return std::tie(x.time, x.rank) < std::tie(y.time, y.rank);
        });
        size_t at = static_cast<size_t>(it - G.crashes.begin());
        for (uint32_t r = 0; r < G.P; r++)
            if (!G.crashed[r] && G.next[r] > at) G.next[r]++; // cannot happen: detection lies ahead
        G.crashes.insert(it, c);
        G.crash_at[me] = c.time;
        G.reports_pending += G.running;
        // Live processes may be blocked without a deadline: each has a waker
        // on its host (so the loopback carries its empty message in no time)
        // that wakes it when the report is due. The wakers are started at the
        // first crash and then wait on one condition variable: creating P
        // actors per crash cost seconds per crash at P = 65,536.
        G.dyn_crash_time.push_back(c.time);
        if (G.wakers_started) {
            G.crash_cv->notify_all();
        } else {
            G.wakers_started = true;
            for (uint32_t r = 0; r < G.P; r++)
                if (!G.crashed[r]) sg4::Actor::create("w" + std::to_string(r), G.mbox_host[r], waker, r);
        }
    }
}

void record_decision(uint32_t rank, uint64_t flag, int err, const uint32_t *failed, size_t nfailed)
{
    Decision &d = G.dec[rank];
    if (d.done) return;
    d.done = true;
    d.time = now();
    d.flag = flag;
    d.err = err;
    if (failed) d.failed.assign(failed, failed + nfailed);
    G.sent_at_last_decision = G.sent;
    // The adversary kills the current root (a process that decides while it
    // takes itself for the root) the moment it decides, so that the failure
    // is discovered during the operation.
    if (G.adversary > 0 && G.running > 1 && G.era[rank] && era_root(G.era[rank]) == rank) {
        G.adversary--;
        crash(rank, true);
    }
}

extern "C" void cb_send(void *ctx, uint32_t dest, const void *msg, size_t len)
{
    post(static_cast<Ctx *>(ctx)->rank, dest, msg, len);
}

extern "C" void cb_deliver(void *ctx, uint32_t origin, uint64_t epoch)
{
    (void)origin;
    record_decision(static_cast<Ctx *>(ctx)->rank, epoch, 0, nullptr, 0);
}

extern "C" void cb_decide(void *ctx, const era_result_t *res)
{
    record_decision(static_cast<Ctx *>(ctx)->rank, res->flag, res->proc_failed, res->failed, res->nfailed);
}

// The protocol state of one process, behind a small common interface.
struct Core {
    virtual ~Core() = default;
    virtual void start() = 0;
    virtual void recv(uint32_t from, const Msg &m) = 0;
    virtual void failure(uint32_t rank) = 0;
};

struct BmgCore : Core {
    bmg_t *b;
    uint32_t me;
    BmgCore(uint32_t r, bool lean, Ctx *ctx) : me(r)
    {
        bmg_callbacks_t cb{cb_send, cb_deliver};
        b = bmg_create(G.P, r, lean ? BMG_VARIANT_LEAN : BMG_VARIANT_FLOOD, &cb, ctx);
        if (!b) {
            std::fprintf(stderr, "ftproto_sim: bmg_create failed (out of memory?)\n");
            std::exit(3);
        }
    }
    ~BmgCore() override { bmg_destroy(b); }
    void start() override
    {
        if (me == G.root) bmg_broadcast(b, 1);
    }
    void recv(uint32_t from, const Msg &m) override
    {
        if (bmg_recv(b, from, m.bytes.data(), m.bytes.size()) != BMG_OK)
            std::fprintf(stderr, "ftproto_sim: p%u rejected a message from p%u\n", me, from);
    }
    void failure(uint32_t rank) override { bmg_failure(b, rank); }
};

struct EraCore : Core {
    era_t *e;
    uint32_t me;
    EraCore(uint32_t r, bool early, Ctx *ctx) : me(r)
    {
        era_callbacks_t cb{cb_send, cb_decide};
        e = era_create(G.P, r, early ? ERA_MODE_EARLY : ERA_MODE_UNIFORM, G.tree, nullptr, 0, &cb, ctx);
        if (!e) {
            std::fprintf(stderr, "ftproto_sim: era_create failed (out of memory?)\n");
            std::exit(3);
        }
        if (!G.torus.empty() && era_set_torus(e, G.torus.data(), static_cast<uint32_t>(G.torus.size())) != ERA_OK) {
            std::fprintf(stderr, "ftproto_sim: era_set_torus refused the dimensions\n");
            std::exit(2);
        }
        G.era[r] = e;
    }
    ~EraCore() override
    {
        G.era[me] = nullptr;
        era_destroy(e);
    }
    void start() override
    {
        // Every process contributes all flag bits but bit (rank % 64), so
        // the decided AND shows which contributions were merged.
        uint64_t flag = ~(uint64_t{1} << (me % 64u));
        if (era_start(e, flag, nullptr, 0, nullptr) != ERA_OK)
            std::fprintf(stderr, "ftproto_sim: p%u: era_start failed\n", me);
    }
    void recv(uint32_t from, const Msg &m) override
    {
        if (era_recv(e, from, m.bytes.data(), m.bytes.size()) != ERA_OK)
            std::fprintf(stderr, "ftproto_sim: p%u rejected a message from p%u\n", me, from);
    }
    void failure(uint32_t rank) override { era_failure(e, rank); }
};

// Binomial-tree allreduce (sum of one int) rooted at 0: reduce up, then
// broadcast down. Failure-free only; messages are 4 bytes.
struct AllreduceCore : Core {
    uint32_t me, lowbit, waiting = 0;
    int32_t acc;
    bool up_done = false;
    explicit AllreduceCore(uint32_t r) : me(r), acc(static_cast<int32_t>(r))
    {
        lowbit = r == 0 ? (1u << 31) : (r & (~r + 1u));
        for (uint32_t k = 1; k < lowbit && me + k < G.P; k <<= 1) waiting++;
    }
    void children_send(int32_t v)
    {
        for (uint32_t k = 1; k < lowbit && me + k < G.P; k <<= 1) post(me, me + k, &v, sizeof v);
    }
    void maybe_up()
    {
        if (waiting != 0 || up_done) return;
        up_done = true;
        if (me == 0) {
            record_decision(0, static_cast<uint64_t>(acc), 0, nullptr, 0);
            children_send(acc);
        } else {
            post(me, me - lowbit, &acc, sizeof acc);
        }
    }
    void start() override { maybe_up(); }
    void recv(uint32_t from, const Msg &m) override
    {
        int32_t v;
        std::memcpy(&v, m.bytes.data(), sizeof v);
        if (from > me) { // from a child: reduce
            acc += v;
            waiting--;
            maybe_up();
        } else { // from the parent: the result
            record_decision(me, static_cast<uint64_t>(v), 0, nullptr, 0);
            children_send(v);
        }
    }
    void failure(uint32_t) override {}
};

void process(uint32_t me)
{
    sg4::Actor::self()->daemonize();
    Ctx ctx{me};
    std::unique_ptr<Core> core;
    switch (G.proto) {
    case Proto::Bmg: core = std::make_unique<BmgCore>(me, false, &ctx); break;
    case Proto::BmgLean: core = std::make_unique<BmgCore>(me, true, &ctx); break;
    case Proto::Era: core = std::make_unique<EraCore>(me, false, &ctx); break;
    case Proto::EraEarly: core = std::make_unique<EraCore>(me, true, &ctx); break;
    case Proto::Allreduce: core = std::make_unique<AllreduceCore>(me); break;
    }
    const double inf = std::numeric_limits<double>::infinity();
    size_t &next = G.next[me];
    // Eager delivery: a message starts flowing to this host when it is sent,
    // not when this actor asks for it (SimGrid's default rendezvous would
    // serialise the messages that reach one process at the same time).
    G.mbox[me]->set_receiver(sg4::Actor::self());
    core->start();
    G.started++;
    check_quiescence();
    sg4::CommPtr pending;
    Msg *msg = nullptr;
    for (;;) {
        double t = now();
        const double my_crash = G.crash_at[me];
        if (G.crashed[me] || my_crash <= t) {
            crash(me, false);
            check_quiescence();
            G.mbox[me]->set_receiver(nullptr);
            return; // the actor dies with its state; its undelivered messages are lost
        }
        while (next < G.crashes.size() && G.crashes[next].time + G.detect <= t) {
            if (G.crashes[next].rank != me) {
                core->failure(G.crashes[next].rank);
                G.reports_pending--;
            }
            next++;
        }
        check_quiescence();
        double deadline = my_crash;
        if (next < G.crashes.size()) deadline = std::min(deadline, G.crashes[next].time + G.detect);
        if (!pending) pending = G.mbox[me]->get_async<Msg>(&msg);
        ssize_t got = sg4::Comm::wait_any_for({pending}, deadline == inf ? -1.0 : std::max(0.0, deadline - t));
        if (got != 0) continue; // a deadline: crash or failure report
        pending = nullptr;
        std::unique_ptr<Msg> m(msg);
        if (m->from == WAKE) continue;
        G.inflight_to[me]--;
        G.inflight--;
        core->recv(m->from, *m);
        auto &o = G.out[me];
        o.erase(std::remove_if(o.begin(), o.end(), [](const sg4::CommPtr &c) { return c->test(); }), o.end());
        check_quiescence();
    }
}

void controller()
{
    int *tok = G.ctl->get<int>();
    delete tok;
}

[[noreturn]] void usage(const char *why)
{
    std::fprintf(stderr,
                 "ftproto_sim: %s\nusage: ftproto_sim PLATFORM.xml --proto era|era-early|bmg|bmg-lean|allreduce "
                 "--p N [--crash RANK@TIME]... [--adversary F] [--detect SEC] [--root R] [--tree binomial|binary|knomial4] [--torus-order AxBxC] [--dump]\n",
                 why);
    std::exit(2);
}

bool parse_u32(const char *s, uint32_t *out)
{
    char *end = nullptr;
    unsigned long v = std::strtoul(s, &end, 10);
    if (!*s || *end || v > 0xffffffffUL) return false;
    *out = static_cast<uint32_t>(v);
    return true;
}

bool parse_double(const char *s, double *out)
{
    char *end = nullptr;
    *out = std::strtod(s, &end);
    return *s && !*end;
}

std::string rank_list(const std::vector<uint32_t> &v)
{
    std::string s;
    for (uint32_t r : v) {
        if (!s.empty()) s += ',';
        s += std::to_string(r);
    }
    return s;
}

long maxrss_kb()
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return ru.ru_maxrss;
}

// CPU seconds (user + system) of this process: the wall time it would take on
// an idle core, whatever else shares the machine (the driver is one thread).
double cpu_s()
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

const char *proto_name(Proto p)
{
    switch (p) {
    case Proto::Era: return "era";
    case Proto::EraEarly: return "era-early";
    case Proto::Bmg: return "bmg";
    case Proto::BmgLean: return "bmg-lean";
    case Proto::Allreduce: return "allreduce";
    }
    return "?";
}

} // namespace

int main(int argc, char **argv)
{
    auto wall0 = std::chrono::steady_clock::now();
    xbt_log_control_set("root.thresh:warning");
    // Defaults, overridable by --cfg on the command line (later wins): the
    // CM02 model (a message costs the sum of its route's link latencies plus
    // size / bottleneck bandwidth, flows share links max-min), no reverse
    // cross-traffic, and small actor stacks so that 65,536 actors fit.
    std::vector<std::string> defaults = {"--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                         "--cfg=network/maxmin-selective-update:yes",
                                         "--cfg=contexts/stack-size:16", "--cfg=contexts/guard-size:0"};
    std::vector<char *> args{argv[0]};
    for (auto &d : defaults) args.push_back(d.data());
    for (int i = 1; i < argc; i++) args.push_back(argv[i]);
    args.push_back(nullptr);
    argc = static_cast<int>(args.size()) - 1;
    argv = args.data();
    sg4::Engine engine(&argc, argv);
    if (argc < 2) usage("missing platform file");
    const char *platform = argv[1];
    std::string proto = "era";
    std::vector<std::pair<uint32_t, double>> crash_args;
    for (int i = 2; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> const char * {
            if (i + 1 >= argc) usage(("missing value after " + a).c_str());
            return argv[++i];
        };
        if (a == "--proto") {
            proto = val();
        } else if (a == "--p") {
            if (!parse_u32(val(), &G.P) || G.P == 0) usage("bad --p");
        } else if (a == "--detect") {
            if (!parse_double(val(), &G.detect) || G.detect < 0) usage("bad --detect");
        } else if (a == "--root") {
            if (!parse_u32(val(), &G.root)) usage("bad --root");
        } else if (a == "--crash") {
            std::string c = val();
            auto at = c.find('@');
            uint32_t r;
            double t;
            if (at == std::string::npos || !parse_u32(c.substr(0, at).c_str(), &r) ||
                !parse_double(c.substr(at + 1).c_str(), &t))
                usage("bad --crash (write RANK@TIME)");
            crash_args.emplace_back(r, t);
        } else if (a == "--adversary") {
            if (!parse_u32(val(), &G.adversary)) usage("bad --adversary");
        } else if (a == "--tree") {
            std::string t = val();
            if (ERA_OK != era_tree_from_name(t.c_str(), &G.tree)) usage("bad --tree (binomial, binary or knomial4)");
        } else if (a == "--torus-order") {
            std::string t = val();
            for (size_t at = 0; at <= t.size();) {
                size_t x = t.find('x', at);
                if (x == std::string::npos) x = t.size();
                uint32_t d;
                if (!parse_u32(t.substr(at, x - at).c_str(), &d) || d == 0) usage("bad --torus-order (write AxBxC)");
                G.torus.push_back(d);
                at = x + 1;
            }
        } else if (a == "--dump") {
            G.dump = true;
        } else {
            usage(("unknown option " + a).c_str());
        }
    }
    if (proto == "era") G.proto = Proto::Era;
    else if (proto == "era-early") G.proto = Proto::EraEarly;
    else if (proto == "bmg") G.proto = Proto::Bmg;
    else if (proto == "bmg-lean") G.proto = Proto::BmgLean;
    else if (proto == "allreduce") G.proto = Proto::Allreduce;
    else usage("unknown --proto");
    if (G.P == 0) usage("--p is required");
    uint64_t torus_procs = 1;
    for (uint32_t d : G.torus) torus_procs *= d;
    if (!G.torus.empty() && (torus_procs != G.P || G.torus.size() > ERA_MAX_DIMS))
        usage("--torus-order: the dimensions must multiply to --p");

    engine.load_platform(platform);
    if (engine.get_host_count() < G.P) usage("the platform has fewer hosts than --p");

    G.crash_at.assign(G.P, std::numeric_limits<double>::infinity());
    for (auto [r, t] : crash_args) {
        if (r >= G.P) usage("--crash rank out of range");
        if (G.proto == Proto::Allreduce) usage("the allreduce runs failure-free");
        G.crash_at[r] = std::min(G.crash_at[r], std::max(0.0, t));
    }
    for (uint32_t r = 0; r < G.P; r++)
        if (G.crash_at[r] != std::numeric_limits<double>::infinity()) G.crashes.push_back({r, G.crash_at[r]});
    std::sort(G.crashes.begin(), G.crashes.end(),
              [](const Crash &x, const Crash &y) { return std::tie(x.time, x.rank) < std::tie(y.time, y.rank); });
    if (G.crashes.size() >= G.P) usage("at least one process must stay alive");
    // The broadcaster is the first process that is alive at the start.
    if (G.proto == Proto::Bmg || G.proto == Proto::BmgLean)
        while (G.crash_at[G.root] <= 0) G.root = (G.root + 1) % G.P;
    if (G.adversary > 0 && G.proto != Proto::Era && G.proto != Proto::EraEarly)
        usage("--adversary applies to the agreement (era, era-early)");
    if (G.crashes.size() + G.adversary >= G.P) usage("at least one process must stay alive");
    // Every static crash is due to be reported to every other process; a
    // process that crashes gives up the reports it has not made.
    G.next.assign(G.P, 0);
    G.reports_pending = static_cast<int64_t>(G.crashes.size()) * (G.P - 1);
    for (uint32_t r = 0; r < G.P; r++)
        if (G.crash_at[r] <= 0) G.reports_pending -= static_cast<int64_t>(G.crashes.size()) - 1;

    G.crashed.assign(G.P, 0);
    G.dec.resize(G.P);
    G.era.assign(G.P, nullptr);
    G.inflight_to.assign(G.P, 0);
    G.out.resize(G.P);
    G.mbox.resize(G.P);
    G.mbox_host.resize(G.P);
    G.ctl = sg4::Mailbox::by_name("ctl");
    G.crash_mutex = sg4::Mutex::create();
    G.crash_cv = sg4::ConditionVariable::create();
    for (uint32_t r = 0; r < G.P; r++) {
        G.mbox[r] = sg4::Mailbox::by_name("p" + std::to_string(r));
        G.mbox_host[r] = engine.host_by_name("h" + std::to_string(r));
    }
    sg4::Actor::create("controller", engine.host_by_name("h0"), controller);
    for (uint32_t r = 0; r < G.P; r++) {
        if (G.crash_at[r] <= 0) {
            G.crashed[r] = 1; // crashed before the operation: never runs
            continue;
        }
        G.running++;
        sg4::Actor::create("p" + std::to_string(r), G.mbox_host[r], process, r);
    }
    engine.run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

    // Summary over the processes alive at the end.
    std::map<std::tuple<uint64_t, int, std::vector<uint32_t>>, uint32_t> decisions;
    uint32_t alive = 0, decided = 0;
    double latency = 0;
    const Decision *any = nullptr;
    for (uint32_t r = 0; r < G.P; r++) {
        if (G.crashed[r]) continue;
        alive++;
        const Decision &d = G.dec[r];
        if (!d.done) continue;
        decided++;
        latency = std::max(latency, d.time);
        decisions[{d.flag, d.err, d.failed}]++;
        if (!any) any = &d;
        if (G.dump)
            std::printf("decision rank=%u time=%.9g flag=%" PRIu64 " err=%d failed=%s\n", r, d.time, d.flag, d.err,
                        rank_list(d.failed).c_str());
    }
    std::string victims, before;
    for (const Crash &c : G.crashes) {
        victims += (victims.empty() ? "" : ",") + std::to_string(c.rank);
        if (c.time <= 0) before += (before.empty() ? "" : ",") + std::to_string(c.rank);
    }
    std::printf("{\"proto\": \"%s\", \"p\": %u, \"alive\": %u, \"decided\": %u, \"distinct_decisions\": %zu, "
                "\"latency\": %.9g, \"end\": %.9g, \"messages\": %" PRIu64 ", \"messages_at_decision\": %" PRIu64
                ", \"bytes\": %" PRIu64 ", \"flag\": %" PRIu64 ", \"err\": %d, \"failed\": [%s], "
                "\"crashed\": [%s], \"crashed_before\": [%s], \"detect\": %.9g, \"quiescent\": %s, "
                "\"wall\": %.3f, \"cpu\": %.3f, \"maxrss_kb\": %ld, \"tree\": \"%s\"}\n",
                proto_name(G.proto), G.P, alive, decided, decisions.size(), latency, G.finish_time, G.sent,
                G.sent_at_last_decision, G.bytes, any ? any->flag : 0, any ? any->err : 0,
                any ? rank_list(any->failed).c_str() : "", victims.c_str(), before.c_str(), G.detect,
                G.finished ? "true" : "false", wall, cpu_s(), maxrss_kb(), era_tree_name(G.tree));
    std::fflush(stdout);
    bool ok = G.finished && decisions.size() <= 1 &&
              (decided == alive || ((G.proto == Proto::Bmg || G.proto == Proto::BmgLean) && decided == 0));
    return ok ? 0 : 1;
}
