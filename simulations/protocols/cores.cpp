#include "cores.hpp"

#include <xbt/log.h>

#include <cstdlib>
#include <cstring>

extern "C" {
#include "bmg.h"
#include "era.h"
}

XBT_LOG_EXTERNAL_CATEGORY(ftproto);
XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ftproto_cores, ftproto, "The protocol cores behind the Core interface");

namespace ftproto {
namespace {

// The cores' C callbacks: ctx is the process's Port.
extern "C" void on_send(void* ctx, uint32_t dest, const void* msg, size_t len)
{
    static_cast<Port*>(ctx)->send(dest, msg, len);
}

extern "C" void on_deliver(void* ctx, uint32_t, uint64_t epoch)
{
    static_cast<Port*>(ctx)->decide(epoch, 0, nullptr, 0);
}

extern "C" void on_decide(void* ctx, const era_result_t* res)
{
    static_cast<Port*>(ctx)->decide(res->flag, res->proc_failed, res->failed, res->nfailed);
}

// A core we cannot create ends the run: the exit code tells why.
[[noreturn]] void give_up(int code, const char* why)
{
    XBT_CRITICAL("%s", why);
    std::exit(code);
}

class BmgCore : public Core {
    bmg_t* b_;
    uint32_t me_;
    uint32_t root_;

public:
    BmgCore(const Options& opt, uint32_t me, Port& port) : me_(me), root_(opt.root)
    {
        bmg_callbacks_t cb{on_send, on_deliver};
        b_ = bmg_create(opt.P, me, opt.proto == Proto::BmgLean ? BMG_VARIANT_LEAN : BMG_VARIANT_FLOOD, &cb, &port);
        if (!b_) give_up(3, "bmg_create failed (out of memory?)");
    }
    ~BmgCore() override { bmg_destroy(b_); }
    BmgCore(const BmgCore&) = delete;
    BmgCore& operator=(const BmgCore&) = delete;

    void start() override
    {
        if (me_ == root_) bmg_broadcast(b_, 1);
    }
    void recv(uint32_t from, const unsigned char* msg, size_t len) override
    {
        if (bmg_recv(b_, from, msg, len) != BMG_OK) XBT_WARN("p%u rejected a message from p%u", me_, from);
    }
    void failure(uint32_t rank) override { bmg_failure(b_, rank); }
};

class EraCore : public Core {
    era_t* e_;
    uint32_t me_;

public:
    EraCore(const Options& opt, uint32_t me, Port& port) : me_(me)
    {
        era_callbacks_t cb{on_send, on_decide};
        e_ = era_create(opt.P, me, opt.proto == Proto::EraEarly ? ERA_MODE_EARLY : ERA_MODE_UNIFORM, opt.tree,
                        nullptr, 0, &cb, &port);
        if (!e_) give_up(3, "era_create failed (out of memory?)");
        if (!opt.torus.empty() && era_set_torus(e_, opt.torus.data(), static_cast<uint32_t>(opt.torus.size())) != ERA_OK)
            give_up(2, "era_set_torus refused the dimensions");
    }
    ~EraCore() override { era_destroy(e_); }
    EraCore(const EraCore&) = delete;
    EraCore& operator=(const EraCore&) = delete;

    void start() override
    {
        // Every process contributes all flag bits but bit (rank % 64), so
        // the decided AND shows which contributions were merged.
        const uint64_t flag = ~(uint64_t{1} << (me_ % 64u));
        if (era_start(e_, flag, nullptr, 0, nullptr) != ERA_OK) XBT_WARN("p%u: era_start failed", me_);
    }
    void recv(uint32_t from, const unsigned char* msg, size_t len) override
    {
        if (era_recv(e_, from, msg, len) != ERA_OK) XBT_WARN("p%u rejected a message from p%u", me_, from);
    }
    void failure(uint32_t rank) override { era_failure(e_, rank); }
    bool takes_itself_for_root() const override { return era_root(e_) == me_; }
};

// Allreduce (sum of one int) over the binomial tree rooted at 0: reduce up,
// then broadcast down. Failure-free only; messages are 4 bytes.
class AllreduceCore : public Core {
    Port& port_;
    uint32_t P_, me_, lowbit_, waiting_ = 0;
    int32_t acc_;
    bool up_done_ = false;

    void send_to_children(int32_t v)
    {
        for (uint32_t k = 1; k < lowbit_ && me_ + k < P_; k <<= 1) port_.send(me_ + k, &v, sizeof v);
    }
    void maybe_send_up()
    {
        if (waiting_ != 0 || up_done_) return;
        up_done_ = true;
        if (me_ == 0) {
            port_.decide(static_cast<uint64_t>(acc_), 0, nullptr, 0);
            send_to_children(acc_);
        } else {
            port_.send(me_ - lowbit_, &acc_, sizeof acc_);
        }
    }

public:
    AllreduceCore(const Options& opt, uint32_t me, Port& port)
        : port_(port), P_(opt.P), me_(me), lowbit_(me == 0 ? (1u << 31) : (me & (~me + 1u))),
          acc_(static_cast<int32_t>(me))
    {
        for (uint32_t k = 1; k < lowbit_ && me_ + k < P_; k <<= 1) waiting_++;
    }
    void start() override { maybe_send_up(); }
    void recv(uint32_t from, const unsigned char* msg, size_t) override
    {
        int32_t v;
        std::memcpy(&v, msg, sizeof v);
        if (from > me_) { // a child's partial sum
            acc_ += v;
            waiting_--;
            maybe_send_up();
        } else { // the parent's result
            port_.decide(static_cast<uint64_t>(v), 0, nullptr, 0);
            send_to_children(v);
        }
    }
    void failure(uint32_t) override {}
};

} // namespace

std::unique_ptr<Core> make_core(const Options& opt, uint32_t rank, Port& port)
{
    switch (opt.proto) {
    case Proto::Bmg:
    case Proto::BmgLean: return std::make_unique<BmgCore>(opt, rank, port);
    case Proto::Era:
    case Proto::EraEarly: return std::make_unique<EraCore>(opt, rank, port);
    case Proto::Allreduce: return std::make_unique<AllreduceCore>(opt, rank, port);
    }
    return nullptr;
}

} // namespace ftproto
