#include "actors.hpp"

#include "simulation.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <limits>
#include <memory>

XBT_LOG_EXTERNAL_CATEGORY(ftproto);
XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ftproto_actors, ftproto, "The actors: processes, wakers, watcher");

namespace ftproto {

namespace {

// The Port of one process: what its core sends goes through the Simulation,
// and so does what it decides.
class ProcessPort final : public Port {
    Simulation& sim_;
    uint32_t rank_;
    const Core* core_ = nullptr;

public:
    ProcessPort(Simulation& sim, uint32_t rank) : sim_(sim), rank_(rank) {}
    void attach(const Core& core) { core_ = &core; }
    void send(uint32_t dest, const void* msg, size_t len) override { sim_.send(rank_, dest, msg, len); }
    void decide(uint64_t flag, int err, const uint32_t* failed, size_t nfailed) override
    {
        sim_.decide(rank_, flag, err, failed, nfailed, *core_);
    }
};

} // namespace

void ProcessActor::operator()() const
{
    sg4::Actor::self()->daemonize();
    ProcessPort port(sim_, rank_);
    const std::unique_ptr<Core> core = make_core(sim_.options(), rank_, port);
    port.attach(*core);
    sg4::Mailbox* inbox = sim_.mailbox(rank_);
    // Eager delivery: a message starts flowing to this host when it is sent,
    // not when this actor asks for it (SimGrid's default rendezvous would
    // serialise the messages that reach one process at the same time).
    inbox->set_receiver(sg4::Actor::self());
    core->start();
    sim_.process_started();

    constexpr double never = std::numeric_limits<double>::infinity();
    sg4::CommPtr pending;
    Msg* msg = nullptr;
    for (;;) {
        const double t = sg4::Engine::get_clock();
        const double my_crash = sim_.crash_time(rank_);
        if (sim_.crashed(rank_) || my_crash <= t) {
            sim_.crash(rank_, CrashKind::Scheduled);
            sim_.check_quiescence();
            inbox->set_receiver(nullptr);
            if (pending) pending->cancel(); // a message on its way here is lost
            return; // the actor dies with its state; its undelivered messages are lost
        }
        sim_.report_failures(rank_, t, *core);
        sim_.check_quiescence();
        // A report may have made this process decide, and the adversary kill it.
        if (sim_.crashed(rank_)) {
            XBT_VERB("p%u was killed on deciding after a failure report", rank_);
            continue;
        }
        const double deadline = std::min(my_crash, sim_.next_report_time(rank_));
        if (!pending) pending = inbox->get_async<Msg>(&msg);
        ssize_t got;
        try {
            got = sg4::Comm::wait_any_for({pending}, deadline == never ? -1.0 : std::max(0.0, deadline - t));
        } catch (const simgrid::NetworkFailureException&) {
            // Its sender crashed while the message was still crossing the
            // network: SimGrid fails the transfer, and the message is lost.
            pending = nullptr;
            sim_.lost(rank_);
            sim_.check_quiescence();
            continue;
        }
        if (got != 0) continue; // a deadline: crash or failure report
        pending = nullptr;
        const std::unique_ptr<Msg> m(msg);
        if (m->from == WAKE) continue;
        sim_.received(rank_);
        core->recv(m->from, m->bytes.data(), m->bytes.size());
        sim_.collect_sends(rank_);
        sim_.check_quiescence();
    }
}

void Waker::operator()() const
{
    sg4::Actor::self()->daemonize();
    for (size_t seen = 0;; seen++) {
        sg4::this_actor::sleep_until(sim_.wait_for_crash(seen));
        if (sim_.crashed(rank_)) return;
        // A blocking put, not a detached one: SimGrid 3.32 finishes a detached
        // comm whose sender has exited by scanning a list of such comms.
        sim_.mailbox(rank_)->put(new Msg{WAKE, {}}, 0);
    }
}

void Watcher::operator()() const
{
    delete sim_.end_mailbox()->get<int>();
}

} // namespace ftproto
