// The command line of ftproto_sim: what SimGrid leaves after taking its own
// --cfg= and --log= arguments. Every option is a row of one table (options.cpp)
// that names it, says what value it takes and applies that value.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
#include "era.h"
}

namespace ftproto {

enum class Proto { Era, EraEarly, Bmg, BmgLean, Allreduce };

const char* proto_name(Proto proto);
inline bool is_agreement(Proto p) { return p == Proto::Era || p == Proto::EraEarly; }
inline bool is_broadcast(Proto p) { return p == Proto::Bmg || p == Proto::BmgLean; }

struct CrashRequest {
    uint32_t rank;
    double time; // <= 0: dead before the operation
};

struct Options {
    std::string platform;
    Proto proto = Proto::Era;
    uint32_t P = 0;
    double detect = 1e-6;
    uint32_t root = 0;                  // broadcaster (bmg); moved to the first process alive at the start
    era_tree_t tree = ERA_TREE_BINOMIAL;
    std::vector<uint32_t> torus;        // --torus-order dimensions, first fastest; empty: rank order
    std::vector<CrashRequest> crashes;  // as given: a rank may repeat (its earliest time counts)
    uint32_t adversary = 0;             // roots to kill as they decide (agreement)
    bool dump = false;                  // print every decision
};

// A command line we refuse; what() is one line naming the option and the reason.
class OptionError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The options in argv[1..argc) (argv[0] is the program), checked against each
// other. Throws OptionError. What needs the platform (its host count) is
// checked by the Simulation.
Options parse_options(int argc, char** argv);

// The usage text, generated from the option table.
void print_usage(std::FILE* out);

} // namespace ftproto
