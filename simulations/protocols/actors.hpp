// The actors of a run, one class per role. Each holds the Simulation it
// belongs to; SimGrid keeps a copy of the object and calls it as the actor's code.
#pragma once

#include <cstdint>

namespace ftproto {

class Simulation;

// Simulated process `rank`: runs its protocol core, takes its messages and
// failure reports, and dies at its crash time.
class ProcessActor {
    Simulation& sim_;
    uint32_t rank_;

public:
    ProcessActor(Simulation& sim, uint32_t rank) : sim_(sim), rank_(rank) {}
    void operator()() const;
};

// The failure detector's side of process `rank` for crashes that were not
// scheduled (the adversary's): when such a crash is due to be reported, an
// empty message wakes the process, which may be blocked without a deadline.
class Waker {
    Simulation& sim_;
    uint32_t rank_;

public:
    Waker(Simulation& sim, uint32_t rank) : sim_(sim), rank_(rank) {}
    void operator()() const;
};

// Waits for the quiescence signal. The only actor that is not a daemon: when
// it returns, the run ends.
class Watcher {
    Simulation& sim_;

public:
    explicit Watcher(Simulation& sim) : sim_(sim) {}
    void operator()() const;
};

} // namespace ftproto
