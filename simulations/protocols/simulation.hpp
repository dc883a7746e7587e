// The state one run shares between its actors, and the rules that change it:
// the traffic (mailboxes, messages in flight), the crashes and their reports,
// the decisions, and the end of the run at quiescence. One Simulation object
// lives in main() for the whole run; the actors (actors.hpp) hold a reference.
#pragma once

#include "cores.hpp"
#include "options.hpp"

#include <simgrid/s4u.hpp>

#include <cstdint>
#include <vector>

namespace ftproto {

namespace sg4 = simgrid::s4u;

// A message on the simulated network: its sender and the core's bytes.
struct Msg {
    uint32_t from;
    std::vector<unsigned char> bytes;
};

// Sender of the empty message a waker uses to wake its process.
constexpr uint32_t WAKE = 0xffffffffu;

enum class CrashKind {
    Scheduled, // from --crash: known from the start, so every report has a deadline
    Adversary, // a root killed as it decides: processes blocked without a deadline need a waker
};

class Simulation {
public:
    // Checks the options against the loaded platform (OptionError if it has
    // fewer than P hosts) and sets up the state of P processes.
    Simulation(const Options& opt, sg4::Engine& engine);
    Simulation(const Simulation&) = delete;
    Simulation& operator=(const Simulation&) = delete;

    // Creates the watcher and one process actor per process alive at the start.
    void start();
    // Prints the decisions (with --dump) and the one JSON summary line;
    // true if every live process decided the same.
    bool summarize(double wall_seconds) const;

    const Options& options() const { return opt_; }
    sg4::Mailbox* mailbox(uint32_t rank) const { return mbox_[rank]; }
    sg4::Mailbox* end_mailbox() const { return end_; }

    // ---- traffic
    void send(uint32_t from, uint32_t dest, const void* buf, size_t len);
    void received(uint32_t rank);      // a message for `rank` left its mailbox
    void lost(uint32_t rank);          // ... or was lost on the way (its sender crashed)
    void collect_sends(uint32_t rank); // forget the sends of `rank` that completed

    // ---- crashes and the failure detector
    bool crashed(uint32_t rank) const { return crashed_[rank] != 0; }
    double crash_time(uint32_t rank) const { return crash_at_[rank]; } // +inf if never
    void crash(uint32_t rank, CrashKind kind);
    // Hand `core` every report due to `rank` by time t.
    void report_failures(uint32_t rank, double t, Core& core);
    // When the next report to `rank` is due (+inf: none pending).
    double next_report_time(uint32_t rank) const;
    // Blocks until the run has had more than `seen` adversary crashes; the
    // time at which crash number `seen` is to be reported.
    double wait_for_crash(size_t seen);

    // ---- decisions and the end
    void decide(uint32_t rank, uint64_t flag, int err, const uint32_t* failed, size_t nfailed, const Core& core);
    void process_started();
    // Called after every event: ends the run once nothing can happen any more.
    void check_quiescence();

private:
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

    Options opt_;
    std::vector<sg4::Mailbox*> mbox_;
    std::vector<sg4::Host*> host_;
    sg4::Mailbox* end_ = nullptr; // the watcher's

    // traffic
    std::vector<uint64_t> inflight_to_;         // messages in flight to each rank
    uint64_t inflight_ = 0;                     // ... to ranks that are not crashed
    std::vector<std::vector<sg4::CommPtr>> out_; // per rank: its sends not known complete
    uint64_t sent_ = 0, bytes_ = 0;

    // crashes, sorted by (time, rank); their reports
    std::vector<Crash> crashes_;
    std::vector<double> crash_at_; // per rank
    std::vector<char> crashed_;    // per rank: its actor is gone (or never ran)
    std::vector<size_t> next_;     // per rank: index in crashes_ of the next crash to report to it
    int64_t reports_pending_ = 0;  // (live process, crash) pairs not reported yet
    // Adversary crashes in order, for the wakers (started at the first one).
    std::vector<double> late_crash_time_;
    bool wakers_started_ = false;
    sg4::MutexPtr crash_mutex_;
    sg4::ConditionVariablePtr crash_cv_;

    // decisions and the end
    std::vector<Decision> dec_;
    uint64_t sent_at_last_decision_ = 0;
    uint32_t adversary_left_ = 0;
    uint32_t running_ = 0, started_ = 0;
    bool finished_ = false;
    double finish_time_ = 0;
};

} // namespace ftproto
