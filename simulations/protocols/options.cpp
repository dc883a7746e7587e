#include "options.hpp"

#include <cstdlib>
#include <cstring>
#include <set>

namespace ftproto {

const char* proto_name(Proto proto)
{
    switch (proto) {
    case Proto::Era: return "era";
    case Proto::EraEarly: return "era-early";
    case Proto::Bmg: return "bmg";
    case Proto::BmgLean: return "bmg-lean";
    case Proto::Allreduce: return "allreduce";
    }
    return "?";
}

namespace {

// Whole-string conversions: no sign games, nothing left over.
bool to_u32(const std::string& s, uint32_t* out)
{
    char* end = nullptr;
    unsigned long v = std::strtoul(s.c_str(), &end, 10);
    if (s.empty() || *end || v > 0xffffffffUL) return false;
    *out = static_cast<uint32_t>(v);
    return true;
}

bool to_double(const std::string& s, double* out)
{
    char* end = nullptr;
    *out = std::strtod(s.c_str(), &end);
    return !s.empty() && !*end;
}

// One row per option. `value` names the value in the usage text (nullptr: the
// option is a switch); `apply` stores it or returns what was expected.
using Apply = const char* (*)(Options&, const std::string&);

struct OptionSpec {
    const char* name;
    const char* value;
    const char* help;
    Apply apply;
};

const OptionSpec kOptions[] = {
    {"--proto", "NAME", "era, era-early (agreement), bmg, bmg-lean (broadcast) or allreduce (default era)",
     [](Options& o, const std::string& v) -> const char* {
         for (Proto p : {Proto::Era, Proto::EraEarly, Proto::Bmg, Proto::BmgLean, Proto::Allreduce})
             if (v == proto_name(p)) {
                 o.proto = p;
                 return nullptr;
             }
         return "era, era-early, bmg, bmg-lean or allreduce";
     }},
    {"--p", "N", "number of processes, on hosts h0 .. h<N-1> of the platform (required)",
     [](Options& o, const std::string& v) -> const char* {
         return to_u32(v, &o.P) && o.P > 0 ? nullptr : "a positive integer";
     }},
    {"--crash", "RANK@TIME", "RANK crashes at TIME seconds (<= 0: before the operation); repeatable",
     [](Options& o, const std::string& v) -> const char* {
         const auto at = v.find('@');
         CrashRequest c{};
         if (at == std::string::npos || !to_u32(v.substr(0, at), &c.rank) || !to_double(v.substr(at + 1), &c.time))
             return "RANK@TIME";
         o.crashes.push_back(c);
         return nullptr;
     }},
    {"--adversary", "F", "agreement: kill the current root the moment it decides, F times (default 0)",
     [](Options& o, const std::string& v) -> const char* {
         return to_u32(v, &o.adversary) ? nullptr : "a count";
     }},
    {"--detect", "SEC", "every live process learns of a crash SEC seconds after it (default 1e-6)",
     [](Options& o, const std::string& v) -> const char* {
         return to_double(v, &o.detect) && o.detect >= 0 ? nullptr : "seconds, >= 0";
     }},
    {"--root", "R", "broadcast: the broadcaster (default 0; the next live rank if R is dead at the start)",
     [](Options& o, const std::string& v) -> const char* { return to_u32(v, &o.root) ? nullptr : "a rank"; }},
    {"--tree", "SHAPE", "agreement tree: binomial, binary or knomial4 (default binomial)",
     [](Options& o, const std::string& v) -> const char* {
         return era_tree_from_name(v.c_str(), &o.tree) == ERA_OK ? nullptr : "binomial, binary or knomial4";
     }},
    {"--torus-order", "AxBxC", "agreement: the tree over the folded order of this torus (first dimension fastest)",
     [](Options& o, const std::string& v) -> const char* {
         o.torus.clear();
         for (size_t at = 0; at <= v.size();) {
             size_t x = v.find('x', at);
             if (x == std::string::npos) x = v.size();
             uint32_t d;
             if (!to_u32(v.substr(at, x - at), &d) || d == 0) return "positive dimensions, written AxBxC";
             o.torus.push_back(d);
             at = x + 1;
         }
         return nullptr;
     }},
    {"--dump", nullptr, "print each live process's decision before the summary",
     [](Options& o, const std::string&) -> const char* {
         o.dump = true;
         return nullptr;
     }},
};

const OptionSpec* find_option(const std::string& name)
{
    for (const OptionSpec& spec : kOptions)
        if (name == spec.name) return &spec;
    return nullptr;
}

// Checks between options (each value was checked alone by its row).
void check(const Options& o)
{
    if (o.platform.empty()) throw OptionError("missing platform file");
    if (o.P == 0) throw OptionError("--p is required");
    if (!o.torus.empty()) {
        uint64_t procs = 1;
        for (uint32_t d : o.torus) procs *= d;
        if (procs != o.P || o.torus.size() > ERA_MAX_DIMS)
            throw OptionError("--torus-order: the dimensions must multiply to --p (at most " +
                              std::to_string(ERA_MAX_DIMS) + " of them)");
    }
    if (o.root >= o.P) throw OptionError("--root " + std::to_string(o.root) + " is not below --p");
    std::set<uint32_t> victims;
    for (const CrashRequest& c : o.crashes) {
        if (c.rank >= o.P) throw OptionError("--crash rank " + std::to_string(c.rank) + " is not below --p");
        victims.insert(c.rank);
    }
    if (!o.crashes.empty() && o.proto == Proto::Allreduce) throw OptionError("the allreduce runs failure-free");
    if (victims.size() >= o.P) throw OptionError("at least one process must stay alive");
    if (o.adversary > 0 && !is_agreement(o.proto))
        throw OptionError("--adversary applies to the agreement (era, era-early)");
    if (victims.size() + o.adversary >= o.P) throw OptionError("at least one process must stay alive");
}

} // namespace

Options parse_options(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; i++) {
        const std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0) { // the one positional argument
            if (!o.platform.empty())
                throw OptionError("unexpected argument '" + arg + "' (the platform is '" + o.platform + "')");
            o.platform = arg;
            continue;
        }
        // --name value or --name=value
        const auto eq = arg.find('=');
        const std::string name = arg.substr(0, eq);
        const OptionSpec* spec = find_option(name);
        if (!spec) throw OptionError("unknown option " + name);
        std::string value;
        if (spec->value == nullptr) {
            if (eq != std::string::npos) throw OptionError(name + " takes no value");
        } else if (eq != std::string::npos) {
            value = arg.substr(eq + 1);
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            throw OptionError("missing value after " + name);
        }
        if (const char* expected = spec->apply(o, value))
            throw OptionError("bad " + name + " '" + value + "' (expected " + expected + ")");
    }
    check(o);
    return o;
}

void print_usage(std::FILE* out)
{
    std::fprintf(out, "usage: ftproto_sim PLATFORM.xml --p N [OPTION]... [--cfg=SETTING:VALUE]... [--log=...]\n\n"
                      "Runs one operation of a protocol core with one SimGrid actor per process and prints\n"
                      "one JSON line. Options (--name VALUE or --name=VALUE):\n");
    for (const OptionSpec& spec : kOptions) {
        std::string head = std::string(spec.name) + (spec.value ? std::string(" ") + spec.value : "");
        std::fprintf(out, "  %-22s %s\n", head.c_str(), spec.help);
    }
    std::fprintf(out, "SimGrid's own settings (--cfg=...) are listed by 'ftproto_sim --cfg-help'.\n");
}

} // namespace ftproto
