// ftroutes: print the routes SimGrid computes on a platform, link by link.
//
//   ftroutes PLATFORM.xml [SRC:DST ...]
//
// For each pair of host names hSRC, hDST (default: every ordered pair of the
// platform's hosts h0, h1, ...) one line "SRC DST LINK LINK ...", with the
// names of the links of SimGrid's route in order. The tests compare these
// routes with the routes of ftslide's topology model (docs/simulations.md).
#include <simgrid/s4u.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

XBT_LOG_NEW_DEFAULT_CATEGORY(ftroutes, "Routes of a platform, for comparison");

namespace sg4 = simgrid::s4u;

static void print_route(const sg4::Engine& engine, const std::string& src, const std::string& dst)
{
    const sg4::Host* a = engine.host_by_name_or_null("h" + src);
    const sg4::Host* b = engine.host_by_name_or_null("h" + dst);
    if (a == nullptr || b == nullptr)
        xbt_die("no host h%s or h%s in the platform", src.c_str(), dst.c_str());
    std::vector<sg4::Link*> links;
    double latency = 0;
    a->route_to(b, links, &latency);
    std::string line = src + " " + dst;
    for (const sg4::Link* link : links)
        line += " " + link->get_name();
    std::printf("%s\n", line.c_str());
}

int main(int argc, char** argv)
{
    sg4::Engine engine(&argc, argv);
    if (argc < 2)
        xbt_die("usage: %s PLATFORM.xml [SRC:DST ...]", argv[0]);
    engine.load_platform(argv[1]);
    if (argc == 2) {
        const size_t hosts = engine.get_host_count();
        for (size_t s = 0; s < hosts; s++)
            for (size_t d = 0; d < hosts; d++)
                if (s != d && engine.host_by_name_or_null("h" + std::to_string(s)) &&
                    engine.host_by_name_or_null("h" + std::to_string(d)))
                    print_route(engine, std::to_string(s), std::to_string(d));
        return 0;
    }
    for (int i = 2; i < argc; i++) {
        std::string pair = argv[i];
        size_t colon = pair.find(':');
        if (colon == std::string::npos)
            xbt_die("bad pair '%s': write SRC:DST", argv[i]);
        print_route(engine, pair.substr(0, colon), pair.substr(colon + 1));
    }
    return 0;
}
