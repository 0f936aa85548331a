// SPDX-License-Identifier: BSD-3-Clause
// btl/ucx_channel.cc - a point-to-point channel over UCX's tag API (coll_strata_p2p_channel=ucx).
//
// One ucp context and worker per process, shared by every team that uses the channel
// (one lock serialises every use of them: teams may be driven from several threads).
// A team's channel has an endpoint per peer, made from the worker addresses its ranks
// exchange at setup over the team's wire; endpoints are kept per peer worker, so two
// teams of the same two processes share one. A message's UCX tag carries the team's
// id, the sender's rank in the team and strata's tag, and receives match all of it:
// messages of two communicators, or of two senders, never meet.
// UCX says whether it can read device memory (its CUDA memory type); only then does a
// device team hand it device buffers, else the bounce channel stages them.
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "btl/channels.h"
#include "common.h"

namespace strata {

namespace {

// Tag: team id (22 bits, channels.h) | sender's rank (20 bits) | strata's tag (22 bits).
constexpr int kTagBits = 22, kRankBits = 20;
static_assert(STRATA_TAG_SPACE <= (1 << kTagBits), "strata's tags fit the UCX tag");
static_assert(kTeamIds <= (uint64_t(1) << (64 - kTagBits - kRankBits)), "team ids fit the UCX tag");
constexpr double kCloseSeconds = 2;  // closing the endpoints, in all; a cancelled receive

ucp_tag_t ucx_tag(uint32_t team, int rank, int tag) {
    return (ucp_tag_t(team) << (kTagBits + kRankBits)) | (ucp_tag_t(rank) << kTagBits) | ucp_tag_t(tag);
}

double seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The process's UCX state, started by the first team that asks and ended with the
// last channel.
struct Ucx {
    std::mutex mu;
    ucp_context_h ctx = nullptr;
    ucp_worker_h worker = nullptr;
    std::string address;  // this worker's
    bool device = false;  // UCX reads CUDA memory
    std::map<std::string, ucp_ep_h> eps;  // by the peer worker's address
    int channels = 0;
};

Ucx &ucx() {
    static Ucx u;
    return u;
}

std::string ucx_error(const char *what, ucs_status_t st) { return std::string(what) + ": " + ucs_status_string(st); }

// Under u.mu.
bool start(Ucx &u, std::string *why) {
    if (u.worker != nullptr) return true;
    ucp_config_t *config = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
    if (st != UCS_OK) {
        *why = ucx_error("ucp_config_read", st);
        return false;
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    st = ucp_init(&params, config, &u.ctx);
    ucp_config_release(config);
    if (st != UCS_OK) {
        *why = ucx_error("ucp_init", st);
        u.ctx = nullptr;
        return false;
    }
    ucp_context_attr_t attr{};
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    u.device = ucp_context_query(u.ctx, &attr) == UCS_OK && (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // u.mu
    ucp_address_t *addr = nullptr;
    size_t len = 0;
    st = ucp_worker_create(u.ctx, &wp, &u.worker);
    if (st == UCS_OK) st = ucp_worker_get_address(u.worker, &addr, &len);
    if (st != UCS_OK) {
        *why = ucx_error("ucp worker", st);
        if (u.worker) ucp_worker_destroy(u.worker);
        ucp_cleanup(u.ctx);
        u.worker = nullptr;
        u.ctx = nullptr;
        return false;
    }
    u.address.assign(reinterpret_cast<const char *>(addr), len);
    ucp_worker_release_address(u.worker, addr);
    return true;
}

// Waits (progressing the worker) for req to complete, up to `limit` seconds; false if
// it did not. Under u.mu.
bool wait_done(Ucx &u, void *req, double limit) {
    const double end = seconds() + limit;
    while (ucp_request_check_status(req) == UCS_INPROGRESS) {
        if (seconds() > end) return false;
        ucp_worker_progress(u.worker);
    }
    return true;
}

// The last channel is gone: every endpoint is closed at once, each after what was
// sent on it has arrived (flush), and the worker and context are ended. A send given
// up in a failed call may never arrive (its receiver gave up): the closes are waited
// for kCloseSeconds in all, then left to ucp_worker_destroy. Under u.mu.
void stop(Ucx &u) {
    std::vector<void *> closing;
    for (auto &e : u.eps) {
        ucp_request_param_t p{};
        void *req = ucp_ep_close_nbx(e.second, &p);
        if (UCS_PTR_IS_PTR(req)) closing.push_back(req);
    }
    u.eps.clear();
    const double end = seconds() + kCloseSeconds;
    for (void *req : closing) {
        wait_done(u, req, end - seconds());
        ucp_request_free(req);
    }
    ucp_worker_destroy(u.worker);
    ucp_cleanup(u.ctx);
    u.worker = nullptr;
    u.ctx = nullptr;
    u.address.clear();
}

class UcxChannel : public P2PChannel {
public:
    UcxChannel(int rank, uint32_t team) : rank_(rank), team_(team) {}
    ~UcxChannel() override;
    UcxChannel(const UcxChannel &) = delete;
    UcxChannel &operator=(const UcxChannel &) = delete;
    Status connect(const ChannelFacts &f, const ChannelSetup &s, std::string *why);
    Status isend(const void *buf, size_t bytes, int peer, int tag, void **req) override;
    Status irecv(void *buf, size_t bytes, int peer, int tag, void **req) override;
    Status test(void *req, bool *done) override { return test_recv(req, done, SIZE_MAX); }
    Status test_recv(void *req, bool *done, size_t expected) override;
    void cancel(void *req, bool recv) override;
    void progress() override {
        std::lock_guard<std::mutex> g(u_.mu);
        ucp_worker_progress(u_.worker);
    }
    bool device_capable() const override { return u_.device; }
    const char *name() const override { return "ucx"; }

private:
    Ucx &u_ = ucx();
    int rank_;
    uint32_t team_;
    bool counted_ = false;  // in u_.channels
    std::vector<ucp_ep_h> eps_;  // by peer rank
    uint64_t sent_msgs_ = 0, sent_bytes_ = 0;
};

UcxChannel::~UcxChannel() {
    if (!counted_) return;
    log(1, "rank %d: UCX channel of team %u: %llu message(s), %llu byte(s) sent", rank_, team_,
        (unsigned long long)sent_msgs_, (unsigned long long)sent_bytes_);
    std::lock_guard<std::mutex> g(u_.mu);
    if (--u_.channels == 0) stop(u_);
}

// Every rank sends its worker address (length first) to every rank, itself included,
// and makes an endpoint from each one it gets. All-to-all: n^2 small messages at setup.
Status UcxChannel::connect(const ChannelFacts &f, const ChannelSetup &s, std::string *why) {
    std::string mine;
    {
        std::lock_guard<std::mutex> g(u_.mu);
        if (!start(u_, why)) return STRATA_ERR_COMM;
        ++u_.channels;
        counted_ = true;
        mine = u_.address;
    }
    const size_t n = size_t(f.size);
    uint64_t my_len = mine.size();
    std::vector<uint64_t> lens(n);
    std::vector<Msg> sends, recvs;
    for (int r = 0; r < f.size; ++r) {
        sends.push_back(Msg{&my_len, sizeof my_len, r});
        recvs.push_back(Msg{&lens[size_t(r)], sizeof lens[0], r});
    }
    STRATA_CHECK(exchange(s.wire, s.tag, sends, recvs, s.waiter, why));
    std::vector<std::string> addrs(n);
    for (int r = 0; r < f.size; ++r) {
        addrs[size_t(r)].resize(lens[size_t(r)]);
        sends[size_t(r)] = Msg{&mine[0], mine.size(), r};
        recvs[size_t(r)] = Msg{&addrs[size_t(r)][0], addrs[size_t(r)].size(), r};
    }
    STRATA_CHECK(exchange(s.wire, s.tag, sends, recvs, s.waiter, why));
    std::lock_guard<std::mutex> g(u_.mu);
    eps_.resize(n);
    for (size_t r = 0; r < n; ++r) {
        auto it = u_.eps.find(addrs[r]);
        if (it == u_.eps.end()) {
            ucp_ep_params_t p{};
            p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
            p.address = reinterpret_cast<const ucp_address_t *>(addrs[r].data());
            ucp_ep_h ep = nullptr;
            const ucs_status_t st = ucp_ep_create(u_.worker, &p, &ep);
            if (st != UCS_OK) {
                *why = ucx_error(("endpoint to rank " + std::to_string(r)).c_str(), st);
                return STRATA_ERR_COMM;
            }
            it = u_.eps.emplace(addrs[r], ep).first;
        }
        eps_[r] = it->second;
    }
    team_ = s.team;
    return STRATA_OK;
}

Status UcxChannel::isend(const void *buf, size_t bytes, int peer, int tag, void **req) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;  // always a request, for test()
    std::lock_guard<std::mutex> g(u_.mu);
    void *r = ucp_tag_send_nbx(eps_[size_t(peer)], buf, bytes, ucx_tag(team_, rank_, tag), &p);
    if (UCS_PTR_IS_ERR(r)) return fail(STRATA_ERR_COMM, "ucp_tag_send_nbx");
    ++sent_msgs_;
    sent_bytes_ += bytes;
    *req = r;
    return STRATA_OK;
}

Status UcxChannel::irecv(void *buf, size_t bytes, int peer, int tag, void **req) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    std::lock_guard<std::mutex> g(u_.mu);
    void *r = ucp_tag_recv_nbx(u_.worker, buf, bytes, ucx_tag(team_, peer, tag), ~ucp_tag_t(0), &p);
    if (UCS_PTR_IS_ERR(r)) return fail(STRATA_ERR_COMM, "ucp_tag_recv_nbx");
    *req = r;
    return STRATA_OK;
}

// A send's request is asked for its status, a receive's also for the length it got
// (SIZE_MAX: a send, or a receive of any length up to its buffer). Not complete: the
// worker moves once, so a waiter that only tests still gets there.
Status UcxChannel::test_recv(void *req, bool *done, size_t expected) {
    std::lock_guard<std::mutex> g(u_.mu);
    ucp_tag_recv_info_t info{};
    ucs_status_t st = expected == SIZE_MAX ? ucp_request_check_status(req) : ucp_tag_recv_request_test(req, &info);
    if (st == UCS_INPROGRESS) {
        ucp_worker_progress(u_.worker);
        *done = false;
        return STRATA_OK;
    }
    ucp_request_free(req);
    *done = true;
    if (st == UCS_ERR_MESSAGE_TRUNCATED) return STRATA_ERR_TRUNCATE;  // a larger message
    if (st != UCS_OK) return fail(STRATA_ERR_COMM, ucs_status_string(st));
    // A shorter message: the ranks passed different sizes.
    return expected != SIZE_MAX && info.length != expected ? STRATA_ERR_TRUNCATE : STRATA_OK;
}

// A receive's cancel completes it (UCS_ERR_CANCELED) at once, unless it completed
// meanwhile: waited for, so nothing writes its buffer after. A send is left to finish
// on its own, as the transport's are (strata.h: cancel): UCX cannot take back one its
// peer has not received, and only a failed call cancels (the peer gave up or is gone,
// and the team takes no more calls). UCX frees it when it ends.
void UcxChannel::cancel(void *req, bool recv) {
    std::lock_guard<std::mutex> g(u_.mu);
    ucp_request_cancel(u_.worker, req);
    if (recv && !wait_done(u_, req, kCloseSeconds))
        warn("channel unavailable", "rank %d: a UCX receive did not end within %.0f s of its cancel", rank_,
             kCloseSeconds);
    ucp_request_free(req);
}

bool ucx_can_connect(const ChannelFacts &f, std::string *why) {
    if (f.size > (1 << kRankBits)) {
        *why = "more ranks than the UCX tag holds";
        return false;
    }
    Ucx &u = ucx();
    std::lock_guard<std::mutex> g(u.mu);
    return start(u, why);
}

std::unique_ptr<P2PChannel> ucx_make(const ChannelFacts &f, const ChannelSetup &s, Status *st, std::string *why) {
    std::unique_ptr<UcxChannel> ch(new UcxChannel(f.rank, s.team));
    *st = ch->connect(f, s, why);
    if (*st != STRATA_OK) return nullptr;
    return std::unique_ptr<P2PChannel>(ch.release());
}

}  // namespace

extern const ChannelKind kUcxChannelKind;
const ChannelKind kUcxChannelKind = {"ucx", "UCX's tag API (ucp) on the communicator's ranks", false,
                                     ucx_can_connect, ucx_make};

}  // namespace strata
