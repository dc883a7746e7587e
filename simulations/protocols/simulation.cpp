#include "simulation.hpp"

#include "actors.hpp"

#include <sys/resource.h>
#include <xbt/log.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <tuple>

XBT_LOG_EXTERNAL_CATEGORY(ftproto);
XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ftproto_run, ftproto, "Traffic, crashes, failure reports and quiescence");

namespace ftproto {

namespace {

constexpr double never = std::numeric_limits<double>::infinity();

double now() { return sg4::Engine::get_clock(); }

template <class C> bool by_time_then_rank(const C& x, const C& y)
{
    return std::tie(x.time, x.rank) < std::tie(y.time, y.rank);
}

std::string rank_list(const std::vector<uint32_t>& ranks)
{
    std::string s;
    for (uint32_t r : ranks) {
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
double cpu_seconds()
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

} // namespace

Simulation::Simulation(const Options& opt, sg4::Engine& engine) : opt_(opt), adversary_left_(opt.adversary)
{
    const uint32_t P = opt_.P;
    if (engine.get_host_count() < P)
        throw OptionError("the platform has " + std::to_string(engine.get_host_count()) +
                          " hosts, fewer than --p " + std::to_string(P));

    // The crash schedule: each rank's earliest requested time (<= 0: dead
    // before the operation, its actor never runs).
    crash_at_.assign(P, never);
    for (const CrashRequest& c : opt_.crashes) crash_at_[c.rank] = std::min(crash_at_[c.rank], std::max(0.0, c.time));
    for (uint32_t r = 0; r < P; r++)
        if (crash_at_[r] != never) crashes_.push_back({r, crash_at_[r]});
    std::sort(crashes_.begin(), crashes_.end(), by_time_then_rank<Crash>);
    // The broadcaster is the first process that is alive at the start.
    if (is_broadcast(opt_.proto))
        while (crash_at_[opt_.root] <= 0) opt_.root = (opt_.root + 1) % P;
    // Every scheduled crash is due to be reported to every other process; a
    // process dead from the start makes none of its reports.
    next_.assign(P, 0);
    reports_pending_ = static_cast<int64_t>(crashes_.size()) * (P - 1);
    for (uint32_t r = 0; r < P; r++)
        if (crash_at_[r] <= 0) reports_pending_ -= static_cast<int64_t>(crashes_.size()) - 1;

    crashed_.assign(P, 0);
    dec_.resize(P);
    inflight_to_.assign(P, 0);
    out_.resize(P);
    mbox_.resize(P);
    host_.resize(P);
    end_ = sg4::Mailbox::by_name("ctl");
    crash_mutex_ = sg4::Mutex::create();
    crash_cv_ = sg4::ConditionVariable::create();
    for (uint32_t r = 0; r < P; r++) {
        mbox_[r] = sg4::Mailbox::by_name("p" + std::to_string(r));
        host_[r] = engine.host_by_name("h" + std::to_string(r));
    }
}

void Simulation::start()
{
    sg4::Actor::create("controller", host_[0], Watcher(*this));
    for (uint32_t r = 0; r < opt_.P; r++) {
        if (crash_at_[r] <= 0) {
            crashed_[r] = 1;
            continue;
        }
        running_++;
        sg4::Actor::create("p" + std::to_string(r), host_[r], ProcessActor(*this, r));
    }
    XBT_INFO("%u processes of %u start, %zu crashes scheduled", running_, opt_.P, crashes_.size());
}

// ---- traffic

void Simulation::send(uint32_t from, uint32_t dest, const void* buf, size_t len)
{
    if (crashed_[from]) return; // crashed in the middle of a step: the rest is lost
    const auto* bytes = static_cast<const unsigned char*>(buf);
    auto* m = new Msg{from, std::vector<unsigned char>(bytes, bytes + len)};
    sent_++;
    bytes_ += len;
    if (!crashed_[dest]) {
        inflight_to_[dest]++;
        inflight_++;
    }
    out_[from].push_back(mbox_[dest]->put_async(m, len));
}

void Simulation::received(uint32_t rank)
{
    inflight_to_[rank]--;
    inflight_--;
}

void Simulation::lost(uint32_t rank)
{
    XBT_VERB("a message to p%u was lost: its sender crashed while it was on the way", rank);
    received(rank);
}

void Simulation::collect_sends(uint32_t rank)
{
    auto& o = out_[rank];
    o.erase(std::remove_if(o.begin(), o.end(), [](const sg4::CommPtr& c) { return c->test(); }), o.end());
}

// ---- crashes

// Process `rank` crashes now: it stops sending, the messages on their way to
// it are lost, and every other live process learns of it `detect` seconds later.
void Simulation::crash(uint32_t rank, CrashKind kind)
{
    if (crashed_[rank]) return;
    crashed_[rank] = 1;
    running_--;
    inflight_ -= inflight_to_[rank];
    inflight_to_[rank] = 0;
    // The reports this process will now never take (its own crash, scheduled,
    // was never due to it).
    reports_pending_ -= static_cast<int64_t>(crashes_.size() - next_[rank]) - (kind == CrashKind::Adversary ? 0 : 1);
    XBT_INFO("p%u crashes (%s)", rank, kind == CrashKind::Adversary ? "killed by the adversary" : "scheduled");
    if (kind == CrashKind::Scheduled) return;

    const Crash c{rank, now()};
    auto it = std::upper_bound(crashes_.begin(), crashes_.end(), c, by_time_then_rank<Crash>);
    const auto at = static_cast<size_t>(it - crashes_.begin());
    for (uint32_t r = 0; r < opt_.P; r++)
        if (!crashed_[r] && next_[r] > at) next_[r]++; // cannot happen: detection lies ahead
    crashes_.insert(it, c);
    crash_at_[rank] = c.time;
    reports_pending_ += running_;
    // Live processes may be blocked without a deadline: each has a waker on
    // its host (so the loopback carries its empty message in no time) that
    // wakes it when the report is due. The wakers are started at the first
    // such crash and then wait on one condition variable: creating P actors
    // per crash cost seconds per crash at P = 65,536.
    late_crash_time_.push_back(c.time);
    if (wakers_started_) {
        crash_cv_->notify_all();
    } else {
        wakers_started_ = true;
        for (uint32_t r = 0; r < opt_.P; r++)
            if (!crashed_[r]) sg4::Actor::create("w" + std::to_string(r), host_[r], Waker(*this, r));
    }
}

void Simulation::report_failures(uint32_t rank, double t, Core& core)
{
    // A report may make this process decide, and the adversary kill it (and
    // insert its crash into crashes_): each report is counted as made before
    // the core sees it, so that crash() gives up only the reports not made,
    // and a dead process takes no more.
    while (!crashed_[rank] && next_[rank] < crashes_.size() && crashes_[next_[rank]].time + opt_.detect <= t) {
        const uint32_t dead = crashes_[next_[rank]++].rank;
        if (dead != rank) {
            XBT_VERB("p%u learns that p%u crashed", rank, dead);
            reports_pending_--;
            core.failure(dead);
        }
    }
}

double Simulation::next_report_time(uint32_t rank) const
{
    return next_[rank] < crashes_.size() ? crashes_[next_[rank]].time + opt_.detect : never;
}

double Simulation::wait_for_crash(size_t seen)
{
    std::unique_lock<sg4::Mutex> lock(*crash_mutex_);
    while (seen == late_crash_time_.size()) crash_cv_->wait(lock);
    return late_crash_time_[seen] + opt_.detect;
}

// ---- decisions and the end

void Simulation::decide(uint32_t rank, uint64_t flag, int err, const uint32_t* failed, size_t nfailed,
                        const Core& core)
{
    Decision& d = dec_[rank];
    if (d.done) return;
    d.done = true;
    d.time = now();
    d.flag = flag;
    d.err = err;
    if (failed) d.failed.assign(failed, failed + nfailed);
    sent_at_last_decision_ = sent_;
    XBT_VERB("p%u decides flag=%" PRIu64 " err=%d with %zu failed", rank, flag, err, nfailed);
    // The adversary kills the current root (a process that decides while it
    // takes itself for the root) the moment it decides, so that the failure
    // is discovered during the operation.
    if (adversary_left_ > 0 && running_ > 1 && core.takes_itself_for_root()) {
        adversary_left_--;
        crash(rank, CrashKind::Adversary);
    }
}

void Simulation::process_started()
{
    started_++;
    check_quiescence();
}

void Simulation::check_quiescence()
{
    if (finished_ || started_ < running_ || inflight_ != 0 || reports_pending_ != 0) return;
    finished_ = true;
    finish_time_ = now();
    XBT_INFO("quiescent: %u live processes, %" PRIu64 " messages", running_, sent_);
    end_->put_init(new int(0), 0)->detach();
}

bool Simulation::summarize(double wall) const
{
    // Over the processes alive at the end.
    std::map<std::tuple<uint64_t, int, std::vector<uint32_t>>, uint32_t> decisions;
    uint32_t alive = 0, decided = 0;
    double latency = 0;
    const Decision* any = nullptr;
    for (uint32_t r = 0; r < opt_.P; r++) {
        if (crashed_[r]) continue;
        alive++;
        const Decision& d = dec_[r];
        if (!d.done) continue;
        decided++;
        latency = std::max(latency, d.time);
        decisions[{d.flag, d.err, d.failed}]++;
        if (!any) any = &d;
        if (opt_.dump)
            std::printf("decision rank=%u time=%.9g flag=%" PRIu64 " err=%d failed=%s\n", r, d.time, d.flag, d.err,
                        rank_list(d.failed).c_str());
    }
    std::string victims, before;
    for (const Crash& c : crashes_) {
        victims += (victims.empty() ? "" : ",") + std::to_string(c.rank);
        if (c.time <= 0) before += (before.empty() ? "" : ",") + std::to_string(c.rank);
    }
    // The line ftslide.simulation.protocols.run_driver parses: keep its format.
    std::printf("{\"proto\": \"%s\", \"p\": %u, \"alive\": %u, \"decided\": %u, \"distinct_decisions\": %zu, "
                "\"latency\": %.9g, \"end\": %.9g, \"messages\": %" PRIu64 ", \"messages_at_decision\": %" PRIu64
                ", \"bytes\": %" PRIu64 ", \"flag\": %" PRIu64 ", \"err\": %d, \"failed\": [%s], "
                "\"crashed\": [%s], \"crashed_before\": [%s], \"detect\": %.9g, \"quiescent\": %s, "
                "\"wall\": %.3f, \"cpu\": %.3f, \"maxrss_kb\": %ld, \"tree\": \"%s\"}\n",
                proto_name(opt_.proto), opt_.P, alive, decided, decisions.size(), latency, finish_time_, sent_,
                sent_at_last_decision_, bytes_, any ? any->flag : 0, any ? any->err : 0,
                any ? rank_list(any->failed).c_str() : "", victims.c_str(), before.c_str(), opt_.detect,
                finished_ ? "true" : "false", wall, cpu_seconds(), maxrss_kb(), era_tree_name(opt_.tree));
    std::fflush(stdout);
    // A broadcast whose broadcaster died before anyone heard it delivers nowhere.
    return finished_ && decisions.size() <= 1 && (decided == alive || (is_broadcast(opt_.proto) && decided == 0));
}

} // namespace ftproto
