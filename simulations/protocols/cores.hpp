// The protocol state of one simulated process behind one small interface: the
// BMG broadcast (bmg.h) and the ERA agreement (era.h), used unchanged, and a
// binomial-tree allreduce as the failure-free baseline. A core talks to the
// rest of the simulation only through its Port.
#pragma once

#include "options.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ftproto {

// What a core needs from the process that runs it.
class Port {
public:
    // Hand `len` bytes to the network, for process `dest`.
    virtual void send(uint32_t dest, const void* msg, size_t len) = 0;
    // The operation completed here: delivered (broadcast) or decided
    // (agreement, allreduce). `failed`: nfailed ascending ranks, may be null.
    virtual void decide(uint64_t flag, int err, const uint32_t* failed, size_t nfailed) = 0;

protected:
    ~Port() = default;
};

class Core {
public:
    virtual ~Core() = default;
    virtual void start() = 0;
    virtual void recv(uint32_t from, const unsigned char* msg, size_t len) = 0;
    // The failure detector reports that `rank` crashed.
    virtual void failure(uint32_t rank) = 0;
    // True if this process takes itself for the root of its current
    // agreement (era_root()); the adversary kills such a process.
    virtual bool takes_itself_for_root() const { return false; }
};

// The core of process `rank` for opt.proto (opt.root: the broadcaster).
std::unique_ptr<Core> make_core(const Options& opt, uint32_t rank, Port& port);

} // namespace ftproto
