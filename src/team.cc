// SPDX-License-Identifier: BSD-3-Clause
// src/team.cc - team setup: layout, shared memory, agreement.
#include "team.h"

#include "mem/device.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

namespace strata {

namespace {
constexpr uint64_t kSetupTagSub = 4095;
constexpr uint64_t kChannelTagSub = 4093;
constexpr int kReleaseWaitSeconds = 2;
}  // namespace

Team::Team(int rank, int size, int node_key, const strata_transport_t &tp, const strata_config_t &cfg)
    : rank_(rank), size_(size), node_key_(node_key), tp_(tp), cfg_(cfg),
      node_(size_t(cfg.ipc_cache_size > 0 ? cfg.ipc_cache_size : 0)), wire_(tp),
      oob_(wire_, tp, rank, size, control_tag(kAgreeSub), control_tag(kNoticeSub)) {
    node_.ipc().set_byte_capacity(cfg.ipc_cache_bytes);
}

Team::~Team() {
    // Its peers free the communicator too: a setup still in steps ends first, so that
    // nothing of it is left posted.
    finish_setup();
    if (queue_) queue_->leave();
    close_inbox();
    // The next communicator of the same local ranks (a dup/free cycle) takes the host
    // segment up again rather than reserving a new one (btl/node_channel.h). A team that
    // had the GPU path has its slots elsewhere and a teardown of its own.
    if (setup_ == Setup::Ready && device_tries_ == 0 && layout_.my_local_size() > 1)
        node_.keep_segment(layout_.my_local(), host_region_bytes(), cfg_.shm_dir);
    release_device();
    drop_channel();
}

// A peer that has not unmapped this rank's GPU region within kReleaseWaitSeconds
// leaves it allocated (16 MiB at the default segment size), rather than freed under
// its feet (NodeChannel::close_device).
void Team::release_device() {
    if (device_tries_ == 0) return;
    const IpcCache::Stats &st = node_.ipc().stats();
    if (st.misses > 0)
        log(1, "IPC cache of local peers' buffers: %llu mapped, %llu hits, %llu evicted, %llu stale, %zu open "
               "at release",
            (unsigned long long)st.misses, (unsigned long long)st.hits, (unsigned long long)st.evicted,
            (unsigned long long)st.stale, node_.ipc().size());
    const bool all_closed = node_.close_device(layout_, device_tries_, kReleaseWaitSeconds);
    if (!all_closed)
        log(1, "a local peer did not unmap this rank's GPU region within %d s: left allocated",
            kReleaseWaitSeconds);
    // Peers may also hold mappings of this rank's buffer copies (posted in calls on
    // host buffers): let go of them unfreed as well.
    if (!all_closed && queue_) queue_->abandon_memory();
    bounce_.reset();
    close_lane();
    dom_ = nullptr;
}

// This rank's side of the stream flags: its GPU can, they are not switched off, the
// node's flags are reachable by the GPU and a stream of the team's own is made.
// The level it can take part in: 0 none, 1 the stream writes (writes), 2 it writes and
// waits (auto); the node runs the least of its ranks' (Team::setup_device).
int Team::open_lane() {
    if (cfg_.stream_flags == STRATA_STREAM_FLAGS_OFF || dom_ == nullptr || !dom_->stream_flags()) return 0;
    const int L = layout_.my_local_size();
    char *lo = reinterpret_cast<char *>(flag(0, 0));
    const char *hi = reinterpret_cast<const char *>(flag(L - 1, kFlagCount - 1) + 1);
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t bytes = (size_t(hi - lo) + page - 1) / page * page;
    if (dom_->register_flags(lo, bytes) != STRATA_OK) return 0;
    lane_flags_ = lo;
    // The level agreed below is the least of the ranks' (0, writes 1, auto 2, eager 3).
    if (dom_->open_lane(&lane_) == STRATA_OK)
        return cfg_.stream_flags == STRATA_STREAM_FLAGS_EAGER ? 3 : cfg_.stream_flags == STRATA_STREAM_FLAGS_AUTO ? 2 : 1;
    close_lane();
    return 0;
}

// Before the flags' segment goes: the lane waits for its stream as it is released.
void Team::close_lane() {
    lane_.reset();
    lane_waits_ = false;
    if (lane_flags_ != nullptr && dom_ != nullptr) dom_->unregister_flags(lane_flags_);
    lane_flags_ = nullptr;
}

Waiter Team::waiter() {
    return Waiter{[this] {
                      if (Fiber::current() != nullptr) Fiber::yield();
                      else progress_others();
                  },
                  cfg_.timeout};
}

void Team::start_setup_steps(bool counted) {
    if (stepped_) return;
    stepped_ = true;
    if (counted) run_steps([this] { (void)set_up(true, false); });
    else run_steps([this] { (void)ensure_setup(true); });
}

// The body's first stretch runs now, inside the call that started it, so that the
// team's own communicator is begun in the application's order of calls.
void Team::run_steps(std::function<void()> body) {
    steps_.reset(new Fiber(std::move(body)));
    advance_setup();
}

void Team::start_private_steps() {
    stepped_ = true;
    if (!steps_) run_steps([this] { (void)open_private(); });
}

bool Team::start_asking_again() {
    if (!asks_again()) return false;
    run_steps([this] { (void)set_up(true, true); });
    return true;
}

bool Team::advance_setup() {
    if (!steps_) return true;
    if (!steps_->resume()) return false;
    steps_.reset();
    return true;
}

void Team::finish_setup() {
    while (!advance_setup()) progress_others();
}


// A rank counts as having a GPU once the application has made a CUDA context
// current on its thread (cudaSetDevice, a first CUDA call): strata never creates a
// context, nor picks a GPU, that the application has not. Many programs make their
// first collective (inside MPI_Comm_split_type, say) before choosing a GPU, so a
// communicator on which not every rank had one is asked again at its 2nd, 4th, 8th,
// ... call: the same calls on every rank, so the answer is agreed, at the cost of
// one small allgather per doubling.
bool Team::defer_setup(size_t call_bytes) {
    if (setup_ != Setup::NotYet || cfg_.check_args == STRATA_CHECK_ARGS_ON || call_bytes > cfg_.small_msg_size ||
        lazy_seen_ >= cfg_.lazy_calls)
        return false;
    ++lazy_seen_;
    return true;
}

bool Team::count_call() {
    ++setup_calls_;
    return (setup_calls_ & (setup_calls_ - 1)) == 0;
}

Status Team::ensure_setup(bool blocking_call) { return set_up(blocking_call, count_call()); }

Status Team::set_up(bool blocking_call, bool doubling) {
    const bool ask_again = recheck_gpus_ && doubling;
    if (setup_ == Setup::Failed || (setup_ == Setup::Off && !ask_again)) return STRATA_FALLBACK;
    // Messages go over the communicator itself while nothing of strata's stays posted on
    // it between calls and the stack's own tags on it are far from strata's (own_comm_due,
    // read at the call's start: alike on every rank), and over the team's own
    // communicator from the first call (blocking, or nonblocking in steps: runner.cc)
    // where that no longer holds. A setup in
    // steps makes it at once: a call it hands back runs there. (A team set up while its
    // communicator was made, inside the stack's progress loop where no communicator can
    // be made, has none until such a call.)
    if (blocking_call && (stepped_ || own_comm_due())) STRATA_CHECK(open_private());
    if (setup_ == Setup::Ready && !ask_again) return STRATA_OK;

    // One allgather tells every rank the node keys, which ranks have a GPU, which
    // could still get one (a driver with GPUs), and which opted out (the info key
    // strata=off, read by each rank alone: any one turns strata off everywhere).
    std::vector<int> keys(size_);
    const int bits = (cfg_.opt_out ? 4 : 0) | (device_driver_present() ? 2 : 0) | (device_context_current() ? 1 : 0);
    std::string why;
    const Status gathered = oob_.agreements.allgather(node_key_ * 8 + bits, keys.data(), waiter(), "node keys and GPUs", &why);
    if (gathered != STRATA_OK) return setup_failed(gathered, why);
    int gpu_ranks = 0, driver_ranks = 0, opted_out = -1;
    for (int r = size_ - 1; r >= 0; --r) {
        int &k = keys[size_t(r)];
        gpu_ranks += k & 1;
        driver_ranks += (k >> 1) & 1;
        if (k & 4) opted_out = r;
        k >>= 3;
    }
    if (opted_out >= 0) {
        setup_ = Setup::Failed;
        if (rank_ == 0)
            log(1, "rank %d opted this communicator out (info key strata=off): every rank's calls on it go to "
                   "the previous collective component",
                opted_out);
        return STRATA_FALLBACK;
    }
    recheck_gpus_ = gpu_ranks < size_ && driver_ranks > 0;
    if (!cfg_.host_buffers && gpu_ranks == 0) {
        // Agreed without a word: every rank saw the same bits.
        if (rank_ == 0 && setup_ == Setup::NotYet)
            log(1, "no rank of this communicator has a GPU (context) yet and host buffers are off "
                   "(coll_strata_host_buffers): its calls go to the previous collective component");
        if (setup_ == Setup::NotYet) setup_ = Setup::Off;
        if (setup_ == Setup::Off) return STRATA_FALLBACK;
    }
    if (setup_ == Setup::Ready) {  // asked again: only the GPU path can still come
        if (gpu_ranks == size_) {
            STRATA_CHECK(agree_device(true));
            if (device()) log_ready(" (every rank has a GPU now)");
            else log(1, "every rank has a GPU now: rank %d runs schedules in host memory", rank_);
        }
        return STRATA_OK;
    }
    // coll_strata_setup_at_creation=auto: a team that will take the GPU path makes its
    // GPU regions (device_segment_size per rank) at its first call, so that only
    // communicators that make calls hold them. Agreed: every rank saw the same bits.
    if (!blocking_call && setup_ == Setup::NotYet && gpu_ranks == size_ && cfg_.device_path == STRATA_DEVICE_PATH_GPU &&
        cfg_.setup_at_creation == STRATA_SETUP_AT_CREATION_HOST) {
        if (rank_ == 0)
            log(2, "every rank has a GPU: this communicator sets up at its first call (coll_strata_setup_at_creation=auto)");
        return STRATA_OK;
    }
    layout_ = make_layout(rank_, keys, cfg_.node_size);
    // A team that will try the GPU path keeps its slots in GPU memory: its host
    // segment holds only flags and mailboxes (a few KiB, not 16 MiB of /dev/shm per
    // rank). Decided from the gathered bits and a setting, so alike on every rank; the
    // slots come back if the GPU path fails (take_host_slots).
    host_slots_ = !(gpu_ranks == size_ && cfg_.device_path == STRATA_DEVICE_PATH_GPU);

    // Every rank takes part in the agreement, whatever happened locally, so that
    // no rank runs strata while another falls back. The agreed value is the lowest
    // rank that hit a failure itself (INT_MAX: none), and that rank alone says why.
    std::string shm_why;
    const Status local = setup_shm(&shm_why);
    if (local == STRATA_ERR_TIMEOUT) {  // this rank's wait for its node leader: no agreement can follow
        node_.unlink();
        return setup_failed(local, shm_why);
    }
    // As if call 0 had ended here: a call's first slot pairs wait for the end of the one
    // before it (Call::slots_free), call 1 included.
    if (local == STRATA_OK) raise_flags(kCallSpan - 1);
    int first_failed = shm_failure_mark(local);
    // The same round agrees on expect_same(): [1] the lowest rank not ok, then the
    // value in three pieces of at most 31 bits, each as its minimum and (INT_MAX -
    // piece) as its maximum; equal everywhere when every minimum is its maximum.
    // And on the point-to-point channel (btl/channels.h): [8] and [9] the kind each
    // rank would use, as minimum and maximum; [10] the lowest rank that could not have
    // the one its setting named; [11] the team's id, as a maximum.
    const ChannelFacts facts{rank_, size_, &tp_};
    std::string chan_why;
    const int kind = choose_channel(cfg_.p2p_channel, facts, &chan_why);
    int agreed[12] = {first_failed, same_ok_ ? INT_MAX : rank_};
    for (int i = 0; i < 3; ++i) {
        agreed[2 + i] = int((same_value_ >> (31 * i)) & 0x7fffffff);
        agreed[5 + i] = INT_MAX - agreed[2 + i];
    }
    agreed[8] = kind;
    agreed[9] = INT_MAX - kind;
    agreed[10] = chan_why.empty() ? INT_MAX : rank_;
    agreed[11] = INT_MAX - int(next_team_id());
    const Status agreed_st = oob_.agreements.min(agreed, 12, waiter(), "shared memory and settings", &why);
    node_.unlink();  // every local peer has attached or given up by now
    if (agreed_st != STRATA_OK) return setup_failed(agreed_st, why);
    first_failed = agreed[0];
    first_not_ok_ = agreed[1];
    same_everywhere_ = first_not_ok_ == INT_MAX;
    for (int i = 0; i < 3; ++i) same_everywhere_ = same_everywhere_ && agreed[2 + i] == INT_MAX - agreed[5 + i];
    if (first_failed != INT_MAX) return shm_fell_back(first_failed, local);
    const bool one_kind = agreed[8] == INT_MAX - agreed[9];
    int first_why = agreed[10];
    if (!one_kind && first_why == INT_MAX) {  // every rank has its kind: the settings differ
        first_why = 0;
        chan_why = "the ranks' coll_strata_p2p_channel settings name different channels";
    }
    const uint32_t team_id = uint32_t(INT_MAX - agreed[11]);
    if (const Status st = setup_channel(one_kind ? agreed[8] : 0, team_id, first_why, chan_why); st != STRATA_OK)
        return st;
    // (STRATA_FALLBACK too: a GPU team whose GPU path failed and whose node could not
    // then spare the host slots)
    if (const Status st = agree_device(gpu_ranks == size_); st != STRATA_OK) return st;
    // A team of two nodes or more keeps a receive posted between its calls (failure
    // notices): only ever on its own communicator, made now at a blocking call (after a
    // setup at creation, at the first call; own_comm_due).
    if (blocking_call && own_comm_due()) STRATA_CHECK(open_private());
    setup_ = Setup::Ready;
    if (!own_comm_due()) post_inbox();
    log_ready("");
    return STRATA_OK;
}

// The line that says how the team runs (verbose 1): at its setup, and again when the
// GPU path comes later (a team set up before its ranks made their GPU contexts, such
// as MPI_COMM_WORLD at MPI_Init).
void Team::log_ready(const char *when) {
    log(1, "team ready: rank %d of %d, %d node(s), node %d has %d rank(s), segment %zu bytes, "
           "schedules in %s memory%s, point-to-point over %s%s",
        rank_, size_, layout_.nnodes(), layout_.my_node(), layout_.my_local_size(),
        segment_bytes(), device() ? "GPU" : "host",
        !device() ? "" : direct_ ? ", device memory to point-to-point directly"
                                 : ", point-to-point staged through host",
        channel().name(), when);
}

// Every rank makes the communicator at the same call (a blocking one, or in steps behind
// a nonblocking one, when own_comm_due says so) after its queued calls completed, so no
// message of the team is outstanding on either side of the move: a peer still in an
// earlier call gets this rank's messages of that call on the old communicator, as it
// posted them. The wait is strata's own, under coll_strata_timeout. A rank whose
// communicator could not be made fails the setup; its peers, on the new one, wait for
// it at the setup's agreement and fail at their deadline.
Status Team::open_private() {
    if (private_ || tp_.open_private == nullptr || tp_.private_done == nullptr) return STRATA_OK;
    private_ = true;  // once, whatever comes of it
    const bool inbox = oob_.notices.listening();
    close_inbox();  // posted again on the new communicator
    opening_private_.store(true, std::memory_order_release);
    void *req = nullptr;
    std::string why;
    Status st = Status(tp_.open_private(tp_.ctx, &req));
    if (st == STRATA_OK) st = wait_request(wire_, req, waiter(), "the team's own communicator", &why);
    else why = std::string("making the team's own communicator: ") + status_name(st);
    opening_private_.store(false, std::memory_order_release);
    tp_.private_done(tp_.ctx, st == STRATA_OK);
    if (st != STRATA_OK) return setup_failed(st, why);
    log(2, "rank %d: this communicator's strata messages go over a communicator of their own", rank_);
    // (A team set up already -- at its creation -- posts it here for the first time.)
    if (inbox || setup_ == Setup::Ready) post_inbox();
    return STRATA_OK;
}

// The GPU path, when every rank has a GPU and it is not switched off: every rank
// takes part in the exchange and the agreement, whatever happened locally, and a
// failure anywhere leaves the whole team on the host path (said once, by the
// lowest rank whose own part failed, else by the lowest that failed at all).
Status Team::agree_device(bool gpu_everywhere) {
    if (!gpu_everywhere || cfg_.device_path != STRATA_DEVICE_PATH_GPU) return STRATA_OK;
    std::string why;
    Status local;
    {
        DeviceErrors errors;  // the driver's words go into the one line below
        Fiber::Pin pin;       // (thread-local) kept on this thread across the waits
        local = setup_device(&why);
        if (!errors.text().empty()) why += ": " + errors.text();
    }
    if (local == STRATA_ERR_TIMEOUT) {  // waiting for a node peer's GPU region: no agreement can follow
        release_device();
        return setup_failed(local, why);
    }
    int first_failed = local == STRATA_OK ? INT_MAX : local == STRATA_ERR_PEER ? size_ + rank_ : rank_;
    std::string agree_why;
    if (const Status st = oob_.agreements.min(&first_failed, 1, waiter(), "GPU path", &agree_why); st != STRATA_OK) {
        release_device();
        return setup_failed(st, agree_why);
    }
    if (first_failed != INT_MAX) {
        release_device();
        recheck_gpus_ = false;  // it would fail again
        if (first_failed == rank_ || first_failed == size_ + rank_)
            warn("gpu setup failed", "GPU setup failed on rank %d (%s); this communicator runs strata in host memory "
                                     "and stages device buffers",
                 rank_, why.c_str());
        return take_host_slots();
    }
    // Reading peers' buffers in place needs every rank's cache on (a setting that
    // should be the same everywhere; agreed so that a stray one cannot hang a node).
    // The same round agrees whether the channel takes device memory on every rank.
    // And whether node flags are ordered by the stream (engine.h), which needs every rank's
    // GPU to have stream memory operations.
    int on[3] = {node_.ipc().enabled() ? 1 : 0, channel().device_capable() ? 1 : 0, open_lane()};
    if (const Status st = oob_.agreements.min(on, 3, waiter(), "IPC cache", &why); st != STRATA_OK) {
        release_device();
        return setup_failed(st, why);
    }
    if (on[2] == 0) close_lane();
    lane_waits_ = on[2] >= 2;
    waits_queued_only_ = on[2] == 2;
    // Said on rank 0, at verbose 1 where the level differs from the default (asked for
    // auto, or less than asked for), else at 2.
    const bool as_default = cfg_.stream_flags == STRATA_STREAM_FLAGS_WRITES && on[2] == 1;
    if (rank_ == 0 && cfg_.stream_flags != STRATA_STREAM_FLAGS_OFF)
        log(as_default ? 2 : 1, "node flags %s",
            on[2] == 3   ? "written and waited for by each GPU's stream (stream memory operations): a call's GPU "
                           "work is queued on the team's own stream at once (eager: a device synchronize may wait "
                           "for node peers to start the call)"
            : on[2] == 2 ? "written and waited for by each GPU's stream (stream memory operations): a call's GPU "
                           "work is queued on the team's own stream, each wait once the peer has queued its flag"
            : on[2] == 1 ? "written by each GPU's stream (stream memory operations), waited for by the host: a "
                           "call's GPU work is queued on the team's own stream as it becomes ready"
                         : "signalled and waited for by the host (a GPU of this communicator has no stream "
                           "memory operations, or a rank set coll_strata_stream_flags 0)");
    const int cache_on = on[0];
    const bool capable = on[1] != 0;
    if (!cache_on && node_.ipc().enabled()) {
        log(1, "coll_strata_ipc_cache_size is 0 on another rank: node peers' buffers are copied, not mapped");
        node_.ipc().set_capacity(0);
    }
    const int t = cfg_.device_transport;
    direct_ = t == STRATA_DEVICE_TRANSPORT_DIRECT || (t == STRATA_DEVICE_TRANSPORT_AUTO && capable);
    if (direct_ && !capable) {
        direct_ = false;
        if (rank_ == 0)
            warn("direct transport unavailable",
                 "coll_strata_device_transport=direct, but the point-to-point channel (%s) is not CUDA-aware on "
                 "every rank: staging through host instead",
                 channel().name());
    }
    if (!direct_) bounce_.reset(new BounceChannel(channel(), *dom_));
    return STRATA_OK;
}

// Every rank makes the agreed kind's channel (collective: it connects over the wire)
// and every rank agrees that all of them could; where one could not, the team keeps
// the transport channel everywhere, and the lowest rank that failed says why.
Status Team::setup_channel(int kind, uint32_t team_id, int first_why, const std::string &why) {
    if (kind == 0) {
        if (first_why == rank_)
            log(1, "%s; the point-to-point channel is the transport on every rank of this communicator",
                why.c_str());
        return STRATA_OK;
    }
    const ChannelKind &k = channel_kind(kind);
    if (const Status st = claim_id(team_id); st != STRATA_OK || team_id_ == 0) return st;
    const ChannelFacts facts{rank_, size_, &tp_};
    Status st = STRATA_OK;
    std::string made_why;
    chan_ = k.make(facts, ChannelSetup{wire_, control_tag(kChannelTagSub), team_id_, waiter()}, &st, &made_why);
    if (st == STRATA_ERR_TIMEOUT) {  // waiting for a peer's address: no agreement can follow
        drop_channel();
        return setup_failed(st, made_why);
    }
    int first_failed = chan_ ? INT_MAX : rank_;
    std::string agree_why;
    if (const Status a = oob_.agreements.min(&first_failed, 1, waiter(), "point-to-point channel", &agree_why); a != STRATA_OK) {
        drop_channel();
        return setup_failed(a, agree_why);
    }
    if (first_failed != INT_MAX) {
        drop_channel();
        if (first_failed == rank_)
            warn("channel unavailable",
                 "rank %d could not connect the %s channel (%s); the point-to-point channel is the transport on "
                 "every rank of this communicator",
                 rank_, k.name, made_why.c_str());
        return STRATA_OK;
    }
    if (rank_ == 0)
        log(1, "point-to-point over the %s channel (team %u; it %s device memory)", k.name, team_id_,
            chan_->device_capable() ? "takes" : "does not take");
    return STRATA_OK;
}

// Every rank claims the proposed team id and they agree that all could; where one
// could not (a team of its process set up meanwhile on another thread took it), they
// release it and agree on the next proposal, up to kIdRounds times, then keep the
// transport channel (team_id_ stays 0).
Status Team::claim_id(uint32_t proposed) {
    constexpr int kIdRounds = 8;
    for (int round = 0; round < kIdRounds; ++round) {
        const bool claimed = claim_team_id(proposed);
        int v[2] = {claimed ? 1 : 0, INT_MAX - int(next_team_id())};
        std::string why;
        const Status st = oob_.agreements.min(v, 2, waiter(), "point-to-point channel's team id", &why);
        if (st == STRATA_OK && v[0] == 1) {
            team_id_ = proposed;
            return STRATA_OK;
        }
        if (claimed) release_team_id(proposed);
        if (st != STRATA_OK) return setup_failed(st, why);
        proposed = uint32_t(INT_MAX - v[1]);
    }
    if (rank_ == 0)
        log(1, "no team id free on every rank after %d tries: the point-to-point channel is the transport",
            kIdRounds);
    return STRATA_OK;
}

void Team::drop_channel() {
    bounce_.reset();
    chan_.reset();
    if (team_id_ != 0) release_team_id(team_id_);
    team_id_ = 0;
}

// This rank's GPU domain and slot region, exported to and mapped from every local
// peer. Each rank sends its handle (or a failure mark) to every local peer, so no
// peer waits for ever on a rank that failed.
Status Team::setup_device(std::string *why) {
    ++device_tries_;  // from now on teardown follows the kFlagClosed handshake
    MemDomain *dom = device_domain(device_current(), why);
    if (dom != nullptr && dom->prepare() != STRATA_OK) {
        *why = std::string(dom->name()) + ": the reduction kernels did not load";
        dom = nullptr;
    }
    const size_t region = size_t(kSlotPairs) * 2 * segment_bytes(true);  // dom_ is set below
    STRATA_CHECK(node_.open_device(layout_, wire_, control_tag(kSetupTagSub - 1), dom, region, waiter(), why));
    dom_ = dom;
    return STRATA_OK;
}

// A GPU team's segment has no full slots (its slots are in GPU memory) until it takes
// them: only the small ones of host_call_slot.
size_t Team::host_region_bytes() const {
    return size_t(kSlotPairs) * (host_slots_ ? 2 * segment_bytes(false) : kHostCallSlot);
}

char *Team::host_call_slot(int local, uint64_t seg) const {
    const size_t pair = host_slots_ ? 2 * segment_bytes(false) : kHostCallSlot;
    return node_.region(local, false) + (seg % kSlotPairs) * pair;
}

Status Team::setup_shm(std::string *why) {
    return node_.open(layout_, wire_, control_tag(kSetupTagSub), cfg_.shm_dir, host_region_bytes(), waiter(), why);
}

// The GPU path failed on a team whose host segment was made without slots: every
// rank (the failure was agreed) replaces it with one that has them, and they agree
// again, so a node that cannot spare the slots falls back everywhere. Only at first
// setup: a team that serves already has its slots.
Status Team::take_host_slots() {
    if (host_slots_) return STRATA_OK;
    host_slots_ = true;
    std::string why;
    const Status local = setup_shm(&why);
    // The GPU regions are gone on every rank of the node (release_device); without a
    // segment there are no flags for teardown's handshake either.
    if (local != STRATA_OK) device_tries_ = 0;
    if (local == STRATA_ERR_TIMEOUT) {  // this rank's wait for its node leader
        node_.unlink();
        return setup_failed(local, why);
    }
    if (local == STRATA_OK) {
        raise_flags(kCallSpan - 1);
        // every rank of the node has let go of the GPU regions already (release_device)
        __atomic_store_n(flag(layout_.my_local(), kFlagClosed), device_tries_, __ATOMIC_RELEASE);
    }
    int first_failed = shm_failure_mark(local);
    const Status agreed = oob_.agreements.min(&first_failed, 1, waiter(), "host slots", &why);
    node_.unlink();
    if (agreed != STRATA_OK) return setup_failed(agreed, why);
    return first_failed == INT_MAX ? STRATA_OK : shm_fell_back(first_failed, local);
}

// What this rank puts into the agreement on its host segment: INT_MAX when it has it;
// its rank when it failed itself (it says why); size + rank when it only heard that its
// node leader failed, so that a rank that failed itself is the one chosen to say why.
int Team::shm_failure_mark(Status local) const {
    if (local == STRATA_OK) return INT_MAX;
    return node_.error().empty() ? size_ + rank_ : rank_;
}

// Every rank agreed that first_failed (a shm_failure_mark) failed: the communicator falls
// back, and that rank says why.
Status Team::shm_fell_back(int first_failed, Status local) {
    setup_ = Setup::Failed;
    if (first_failed == rank_ || first_failed == size_ + rank_)
        warn("shared memory failed", "shared-memory setup failed on rank %d (%s); this communicator falls back to "
                                     "the previous collective component",
             rank_, node_.error().empty() ? status_name(local) : node_.error().c_str());
    return STRATA_FALLBACK;
}

// A setup wait failed (the deadline, a peer that gave up, the transport). On a team
// that serves already (asked again about GPUs) it is this call's failure: the team
// takes no more calls and its peers hear of it, as of any failed call. Before the
// team served anything, its calls go to the previous component from now on; a peer
// still waiting for this rank gives up at its own deadline. The line says what was
// waited for.
Status Team::setup_failed(Status st, const std::string &why) {
    // (Before the call is numbered: it is the next call that fails.)
    if (setup_ == Setup::Ready) return fail_call(st, "team setup: " + why, call_seq_ + 1);
    setup_ = Setup::Failed;
    last_error_ = "team setup: " + why;
    warn("setup failed", "rank %d: %s; this communicator falls back to the previous collective component", rank_,
         last_error_.c_str());
    return st;
}


// All agree on the node: the device path and the cache's being on are agreed at setup,
// the threshold is a setting, and bytes and the node's size are the same on its ranks.
bool Team::zero_copy(size_t bytes) const {
    return device() && node_.ipc().enabled() && layout_.my_local_size() > 1 && bytes > cfg_.zero_copy_size;
}

// The three parts of reading node peers' buffers in place, run as poll steps of the
// call's schedule (Call::map_peers), with POSTED flags between them.
Status Team::post_buffer(uint64_t n, const void *buf, size_t bytes, int source, const void *out) {
    const int me = layout_.my_local();
    // With a lane, the lane's POSTED write orders peers after the application's work
    // (Call::map_peers); without one, post waits for it.
    return node_.post(n, me, *dom_, buf, bytes == 0 || (source >= 0 && source != me), out, lane_ == nullptr);
}

Status Team::open_peers(uint64_t n, std::vector<const char *> *bufs, std::vector<const char *> *outs) {
    return node_.open_peers(n, layout_.my_local(), layout_.my_local_size(), *dom_, bufs, outs);
}

bool Team::all_opened(uint64_t n) const {
    const bool ok = node_.all_opened(n, layout_.my_local_size());
    if (!ok)
        log(2, "a buffer of this call cannot be shared through CUDA IPC on node %d (host, managed or "
               "pool memory): copied through the slots",
            layout_.my_node());
    return ok;
}

char *Team::slot(int local, uint64_t seg, int half) const {
    return node_.region(local, device()) + ((seg % kSlotPairs) * 2 + size_t(half)) * segment_bytes();
}

}  // namespace strata
