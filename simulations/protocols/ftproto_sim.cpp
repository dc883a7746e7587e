// ftproto_sim: the protocol cores (bmg.h, era.h) at scale in SimGrid s4u.
//
// One actor per process, on host h<rank> of the platform. The cores run
// unchanged: what they send becomes an asynchronous put on the destination's
// mailbox with the message's byte size (so the network model charges it),
// every received message goes to bmg_recv()/era_recv(), and every crash is
// reported to every live process by bmg_failure()/era_failure() `--detect`
// seconds after it happened.
//
// A crash at time <= 0 is a crash before the operation: that actor never
// runs. A crash at time t > 0 kills the actor at t: its messages already
// carried to their destination's host arrive, those still crossing the network
// are lost, and so are those on their way to it. --adversary F (agreement
// only) kills the current root (era_root(): the lowest live rank, or the
// lowest in the folded order with --torus-order) the moment it decides, F
// times, so that every such failure is discovered during the operation. The
// run ends at quiescence: every live process has decided (delivered), no
// message to a live process is in flight and every crash has been reported.
// One JSON line on stdout summarises it; exit 0 if every live process decided
// the same, 1 if not, 2 for a command line we refuse.
//
//   ftproto_sim PLATFORM.xml --p N [--proto ...] [--crash RANK@TIME]... [--cfg=...]
//
// (ftproto_sim --help lists the options.) The pieces:
//   options.*    the command line, one table of options
//   cores.*      the protocol cores behind one Core interface
//   simulation.* the state a run shares between its actors, and its rules
//   actors.*     the roles: process, waker (failure reports), watcher (end)
// Logging goes through XBT (category ftproto and its children; warnings and
// above by default, e.g. --log=ftproto.thresh:verbose for every crash, report
// and decision).
#include "options.hpp"
#include "simulation.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

XBT_LOG_NEW_DEFAULT_CATEGORY(ftproto, "ftproto_sim: the protocol cores in SimGrid");

namespace {

// A refused command line: one line on stderr, exit 2.
[[noreturn]] void refuse(const char* why)
{
    std::fprintf(stderr, "ftproto_sim: %s; ftproto_sim --help lists the options\n", why);
    std::exit(2);
}

// SimGrid settings of ours, placed before the user's --cfg= arguments so
// that theirs win: the CM02 model (a message costs the sum of its route's
// link latencies plus size / bottleneck bandwidth, flows share links
// max-min), no reverse cross-traffic, and small actor stacks so that 65,536
// actors fit.
const char* const kDefaultSettings[] = {"--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                        "--cfg=network/maxmin-selective-update:yes",
                                        "--cfg=contexts/stack-size:16", "--cfg=contexts/guard-size:0"};

} // namespace

int main(int argc, char** argv)
{
    const auto wall0 = std::chrono::steady_clock::now();
    for (int i = 1; i < argc; i++)
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            ftproto::print_usage(stdout);
            return 0;
        }
    xbt_log_control_set("root.thresh:warning");

    std::vector<std::string> settings(std::begin(kDefaultSettings), std::end(kDefaultSettings));
    std::vector<char*> args{argv[0]};
    for (auto& s : settings) args.push_back(s.data());
    args.insert(args.end(), argv + 1, argv + argc);
    args.push_back(nullptr);
    int nargs = static_cast<int>(args.size()) - 1;
    simgrid::s4u::Engine engine(&nargs, args.data()); // takes the --cfg= and --log= arguments

    ftproto::Options opt;
    try {
        opt = ftproto::parse_options(nargs, args.data());
    } catch (const ftproto::OptionError& e) {
        refuse(e.what());
    }
    try {
        engine.load_platform(opt.platform);
    } catch (const std::exception& e) {
        refuse(("cannot load the platform '" + opt.platform + "': " + e.what()).c_str());
    }
    // Options and state of the run, shared by its actors until it ends.
    std::unique_ptr<ftproto::Simulation> sim;
    try {
        sim = std::make_unique<ftproto::Simulation>(opt, engine);
    } catch (const ftproto::OptionError& e) {
        refuse(e.what());
    }
    sim->start();
    engine.run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return sim->summarize(wall) ? 0 : 1;
}
