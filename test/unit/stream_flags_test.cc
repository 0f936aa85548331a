// SPDX-License-Identifier: BSD-3-Clause
// test/unit/stream_flags_test.cc - work chained on the GPU (engine.h): a started
// nonblocking device allreduce completes with no host progress after its start.
//
// Two ranks as threads of one node on a device team (the fake driver opens a process's
// own IPC handles with FAKECUDA_IPC_SELF=1), 8 segments per call. After a first
// blocking call has set the team up, each rank starts an allreduce with
// strata_iallreduce and then makes no call of strata at all: it only copies its device
// result to the host, on the GPU domain's own stream, until the sum is there. With
// stream flags (coll_strata_stream_flags auto) the lane's stream runs the whole call,
// flags included, so the sum appears; with them off (0) the host would have to signal
// and poll every flag, so the call stops after its first steps and the sum never
// appears (the control: it must not). Only then, once every rank has looked, is the
// request tested to completion and freed: the ranks are threads of one process, and
// one rank's test progresses the other's call too (progress.h), so a rank that tested
// while the other still looked would complete the other's call for it. IPC cache 0:
// peers' buffers are not mapped in place, whose buffer exchange needs the host
// (Call::map_peers). Needs the fake driver; skips elsewhere.
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine.h"
#include "harness.h"
#include "mem/classify.h"
#include "mem/cuda_domain.h"
#include "mem/domain.h"
#include "strata.h"
#include "team.h"
#include "topo/cuda_api.h"

namespace {

using strata_test::ThreadJob;

constexpr int kRanks = 2;
constexpr size_t kCount = 2048;      // int32: 8 KiB, 8 segments of 1 KiB
constexpr double kPatienceSeconds = 5;

struct IpcSelf {
    IpcSelf() { setenv("FAKECUDA_IPC_SELF", "1", 1); }
    ~IpcSelf() { unsetenv("FAKECUDA_IPC_SELF"); }
};

int32_t input(int rank, size_t i) { return int32_t(rank * 1000 + int(i % 977)); }

// What each rank saw: whether the sum reached its device buffer before it called
// strata again, and any error.
struct Seen {
    bool without_progress = false;
    std::string error;
    strata_status_t status = STRATA_OK;  // the nonblocking call's outcome
};

// Copies the device result to host on the domain's stream (not the team's) and
// compares it with the sum: no call of strata.
bool sum_arrived(strata::MemDomain &gpu, const void *dev, std::vector<int32_t> *host) {
    strata::Ticket t;
    if (gpu.copy(host->data(), dev, kCount * sizeof(int32_t), &t) != STRATA_OK) return false;
    if (strata::wait_ticket(gpu, &t) != STRATA_OK) return false;
    for (size_t i = 0; i < kCount; ++i) {
        int32_t want = 0;
        for (int r = 0; r < kRanks; ++r) want += input(r, i);
        if ((*host)[i] != want) return false;
    }
    return true;
}

// The settings of these tests' teams: 1 KiB segments (kCount is 8 of them), peers'
// buffers copied through the slots, and the level of stream flags asked for.
strata_config_t chained_config(int stream_flags) {
    strata_config_t cfg = strata_test::host_test_config();
    cfg.device_segment_size = 1024;
    cfg.ipc_cache_size = 0;
    cfg.stream_flags = stream_flags;
    return cfg;
}

// This rank's device buffers of kCount int32: send holds input(rank, i), host a copy.
bool device_inputs(strata::MemDomain &gpu, int rank, void **send, void **recv, std::vector<int32_t> *host) {
    const size_t bytes = kCount * sizeof(int32_t);
    host->resize(kCount);
    for (size_t i = 0; i < kCount; ++i) (*host)[i] = input(rank, i);
    strata::Ticket t;
    return gpu.alloc(bytes, send) == STRATA_OK && gpu.alloc(bytes, recv) == STRATA_OK &&
           gpu.copy(*send, host->data(), bytes, &t) == STRATA_OK && strata::wait_ticket(gpu, &t) == STRATA_OK;
}

// peer_fails: once every rank has looked, rank 1 fails the started call as a rank does
// whose deadline passes while its stream still waits (Team::fail_call), before any
// rank tests its request.
void one_rank(ThreadJob &job, int rank, int stream_flags, bool peer_fails, std::atomic<int> *started,
              std::atomic<int> *looked, Seen *seen) {
    std::string &err = seen->error;
    if (!strata_test::make_gpu0_current(&err)) return;
    strata::MemDomain *gpu = strata::cuda_domain(0, &err);
    if (gpu == nullptr) return;
    strata_transport_t tp = job.transport(rank);
    const strata_config_t cfg = chained_config(stream_flags);
    strata_team_t *team = nullptr;
    if (strata_team_create(rank, kRanks, 0, &tp, &cfg, &team) != STRATA_OK) {
        err = "team create";
        return;
    }
    const size_t bytes = kCount * sizeof(int32_t);
    void *send = nullptr, *recv = nullptr;
    std::vector<int32_t> host;
    strata::Ticket t;
    if (!device_inputs(*gpu, rank, &send, &recv, &host)) {
        err = "device buffers";
    } else if (strata_allreduce(team, send, recv, kCount, STRATA_INT32, STRATA_OP_SUM) != STRATA_OK ||
               !sum_arrived(*gpu, recv, &host)) {
        err = "the blocking allreduce that sets the team up";
    }
    // Both ranks start only once both have set up.
    ++*started;
    while (err.empty() && started->load() < kRanks) std::this_thread::yield();
    strata_request_t *req = nullptr;
    if (err.empty()) {
        std::vector<int32_t> zero(kCount, 0);
        if (gpu->copy(recv, zero.data(), bytes, &t) != STRATA_OK || strata::wait_ticket(*gpu, &t) != STRATA_OK ||
            strata_iallreduce(team, send, recv, kCount, STRATA_INT32, STRATA_OP_SUM, nullptr, &req) != STRATA_OK ||
            req == nullptr)
            err = "strata_iallreduce";
    }
    if (err.empty()) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(kPatienceSeconds);
        while (!(seen->without_progress = sum_arrived(*gpu, recv, &host)) &&
               std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // No rank calls strata again until every rank has looked (see the top).
    ++*looked;
    while (looked->load() < kRanks) std::this_thread::yield();
    if (peer_fails && rank == 1 && err.empty())
        static_cast<strata::Team *>(team)->fail_call(STRATA_ERR_TIMEOUT, "injected: this rank gave up the call");
    ++*looked;
    while (looked->load() < 2 * kRanks) std::this_thread::yield();
    if (err.empty()) {
        strata_status_t st = STRATA_OK;
        while (!strata_request_test(req, &st)) std::this_thread::yield();
        seen->status = st;
        if (!peer_fails && (st != STRATA_OK || !sum_arrived(*gpu, recv, &host)))
            err = "the nonblocking allreduce's result";
        strata_request_free(req);
    }
    gpu->release(send);
    gpu->release(recv);
    strata_team_destroy(team);
}

std::vector<Seen> run_job(int stream_flags, bool peer_fails = false) {
    IpcSelf self;
    ThreadJob job(kRanks);
    std::vector<Seen> seen(kRanks);
    std::atomic<int> started{0}, looked{0};
    job.run([&](int rank) {
        one_rank(job, rank, stream_flags, peer_fails, &started, &looked, &seen[size_t(rank)]);
    });
    return seen;
}

bool fake_driver() {
    std::string why;
    const strata::topo::cu::Driver *d = strata::cuda_driver(&why);
    return d != nullptr && d->lib != nullptr && dlsym(d->lib, "fakecuda_counters") != nullptr;
}

// eager: the lane waits for peers' flags whatever they have queued, so the whole call
// is queued at its start and runs to its end on the GPU.
TEST(StreamFlags, StartedNonblockingDeviceAllreduceCompletesWithoutHostProgress) {
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (test/fakecuda)";
    for (const Seen &s : run_job(STRATA_STREAM_FLAGS_EAGER)) {
        EXPECT_EQ(s.error, "");
        EXPECT_TRUE(s.without_progress) << "the sum did not reach the device buffer within " << kPatienceSeconds
                                        << " s of the start with no host progress";
    }
}

// The control: the host path needs host progress, so the check above can fail.
TEST(StreamFlags, WithStreamFlagsOffTheStartedCallWaitsForHostProgress) {
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (test/fakecuda)";
    for (const Seen &s : run_job(STRATA_STREAM_FLAGS_OFF)) {
        EXPECT_EQ(s.error, "");
        EXPECT_FALSE(s.without_progress) << "the host path completed with no host progress";
    }
}


// A node peer that gives up a chained call drains its stream by raising the flags its
// stream waits for, node peers' flags, which can let a third rank's stream through
// into slots never written (engine.cc, drain_lane). So a chained call that completes
// is checked against its node peers' failures (Team::check_chained_run): here rank 1
// fails the call after both streams ran it, and rank 0's request, tested only then,
// must end with the peer's failure, not as a result.
TEST(StreamFlags, AChainedCallThatANodePeerGaveUpEndsWithItsFailure) {
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (test/fakecuda)";
    const std::vector<Seen> seen = run_job(STRATA_STREAM_FLAGS_EAGER, true);
    EXPECT_EQ(seen[0].error, "");
    EXPECT_TRUE(seen[0].without_progress);
    EXPECT_EQ(seen[0].status, STRATA_ERR_PEER) << "a call a node peer gave up ended as a result";
}

// A device synchronize on a rank that has started a chained call before its node peer
// (MPI allows the peer to start it only later, say after a barrier on another
// communicator that waits for this rank): with auto, the lane waits only for flag
// values the peer has queued on its own lane (engine.cc, peer_queued), so the
// synchronize returns at once; eager queues the wait for the peer's READY at the start,
// and the synchronize waits until the peer starts (here a watchdog starts it after
// kPatienceSeconds, so that the control ends). Both exact. Returns whether rank 0's
// synchronize returned before rank 1 started.
bool synchronize_before_the_peer_starts(int stream_flags, std::vector<std::string> *errors) {
    IpcSelf self;
    ThreadJob job(kRanks);
    errors->assign(kRanks, "");
    std::atomic<int> ready{0};
    std::atomic<bool> synced{false}, peer_waited{false};
    job.run([&](int rank) {
        std::string &err = (*errors)[size_t(rank)];
        if (!strata_test::make_gpu0_current(&err)) return;
        strata::MemDomain *gpu = strata::cuda_domain(0, &err);
        const strata::topo::cu::Driver *d = strata::cuda_driver(&err);
        using Sync = int (*)();
        const auto sync = d != nullptr ? reinterpret_cast<Sync>(dlsym(d->lib, "cuCtxSynchronize")) : nullptr;
        strata_transport_t tp = job.transport(rank);
        const strata_config_t cfg = chained_config(stream_flags);
        strata_team_t *team = nullptr;
        if (gpu == nullptr || sync == nullptr || strata_team_create(rank, kRanks, 0, &tp, &cfg, &team) != STRATA_OK) {
            err = "setup";
            ++ready;
            return;
        }
        void *send = nullptr, *recv = nullptr;
        std::vector<int32_t> host;
        if (!device_inputs(*gpu, rank, &send, &recv, &host) ||
            strata_allreduce(team, send, recv, kCount, STRATA_INT32, STRATA_OP_SUM) != STRATA_OK)
            err = "the blocking allreduce that sets the team up";
        ++ready;
        while (ready.load() < kRanks) std::this_thread::yield();
        strata_request_t *req = nullptr;
        if (rank == 1) {  // starts once rank 0's synchronize has returned, or after the watchdog
            const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(kPatienceSeconds);
            while (!synced.load() && std::chrono::steady_clock::now() < give_up)
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            peer_waited = !synced.load();
        }
        if (err.empty() && strata_iallreduce(team, send, recv, kCount, STRATA_INT32, STRATA_OP_SUM, nullptr, &req) != STRATA_OK)
            err = "strata_iallreduce";
        if (rank == 0) {
            if (sync() != 0) err = "cuCtxSynchronize";
            synced = true;
        }
        if (err.empty()) {
            strata_status_t st = STRATA_OK;
            while (!strata_request_test(req, &st)) std::this_thread::yield();
            strata_request_free(req);
            if (st != STRATA_OK || !sum_arrived(*gpu, recv, &host)) err = "the nonblocking allreduce's result";
        }
        gpu->release(send);
        gpu->release(recv);
        strata_team_destroy(team);
    });
    return !peer_waited.load();
}

TEST(StreamFlags, ADeviceSynchronizeBeforeAPeerStartsDoesNotWaitForIt) {
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (test/fakecuda)";
    std::vector<std::string> errors;
    EXPECT_TRUE(synchronize_before_the_peer_starts(STRATA_STREAM_FLAGS_AUTO, &errors))
        << "auto: rank 0's cuCtxSynchronize waited for rank 1 to start the call";
    for (const std::string &e : errors) EXPECT_EQ(e, "") << "auto";
    // The control: eager queues the wait for the peer's READY at the start.
    EXPECT_FALSE(synchronize_before_the_peer_starts(STRATA_STREAM_FLAGS_EAGER, &errors))
        << "eager: the synchronize returned before the peer started, so the check above cannot fail";
    for (const std::string &e : errors) EXPECT_EQ(e, "") << "eager";
}

// Which waits go on the lane: only one whose kind of flag this rank signalled to at
// least its value earlier in build order (engine.cc, choose_lane_steps). Two local
// ranks' flags laid out as the node's segment lays them out (a line per flag, kinds
// side by side); this rank copies its input, raises its READY, then waits for the
// peer's READY (same kind: on the lane) and for the peer's SLICE (no SLICE of its own
// raised yet: with the host, or every rank's stream would wait for a SLICE queued
// behind that wait). Needs no GPU: the plan only looks at the steps.
TEST(StreamFlags, OnlyAWaitOfAKindThisRankSignalledGoesOnTheLane) {
    constexpr size_t kLineWords = 8, kKinds = 8;
    std::vector<uint64_t> seg(2 * kKinds * kLineWords + kLineWords, 0);
    auto flag = [&seg](int local, int kind) { return &seg[(size_t(local) * kKinds + size_t(kind)) * kLineWords]; };
    const strata::FlagKinds kinds{reinterpret_cast<uintptr_t>(flag(0, 0)), kKinds * kLineWords * sizeof(uint64_t)};
    EXPECT_EQ(kinds.of(flag(0, 1)), kinds.of(flag(1, 1)));
    EXPECT_NE(kinds.of(flag(0, 0)), kinds.of(flag(1, 1)));
    strata::MemDomain &dom = strata::host_domain();
    std::vector<char> in(64, 1), out(64, 0), more(64, 0);
    strata::Schedule s;
    const strata::StepId copied = s.copy(dom, out.data(), in.data(), in.size());
    const strata::StepId ready = s.signal(flag(0, 0), 1, {copied});
    const strata::StepId peer_ready = s.wait(flag(1, 0), 1, {ready});
    const strata::StepId peer_slice = s.wait(flag(1, 1), 1, {ready});
    s.copy(dom, more.data(), out.data(), out.size(), {peer_ready, peer_slice});
    const std::vector<uint8_t> lane = s.lane_plan(&dom, &dom, kinds);
    ASSERT_EQ(lane.size(), s.size());
    EXPECT_EQ(lane[copied], 1);
    EXPECT_EQ(lane[ready], 1);
    EXPECT_EQ(lane[peer_ready], 1) << "a wait for a kind this rank raised first";
    EXPECT_EQ(lane[peer_slice], 0) << "a wait for a kind this rank has not raised went on the lane";
    // Once this rank has raised its SLICE too, the same wait may go on the lane.
    strata::Schedule t;
    const strata::StepId c2 = t.copy(dom, out.data(), in.data(), in.size());
    const strata::StepId r2 = t.signal(flag(0, 0), 1, {c2});
    const strata::StepId s2 = t.signal(flag(0, 1), 1, {r2});
    const strata::StepId w2 = t.wait(flag(1, 1), 1, {s2});
    t.copy(dom, more.data(), out.data(), out.size(), {w2});
    EXPECT_EQ(t.lane_plan(&dom, &dom, kinds)[w2], 1);
}

// What one process asked of the GPU (both thread-ranks together), from the fake's
// counters; all -1 without them.
struct GpuCounts {
    long long launches = -1, copies = -1, host_waits = -1, stream_waits = -1, stream_writes = -1;
};

GpuCounts gpu_counts() {
    struct Counters {  // test/fakecuda/fakecuda.h, struct fakecuda_counters (its first fields)
        unsigned long long launches, copies, events_recorded, stream_waits, stream_writes, host_waits, dev_read,
            dev_written;
    };
    std::string why;
    const strata::topo::cu::Driver *d = strata::cuda_driver(&why);
    using CountersFn = int (*)(Counters *);
    auto fn = d && d->lib ? reinterpret_cast<CountersFn>(dlsym(d->lib, "fakecuda_counters")) : nullptr;
    GpuCounts g;
    Counters c{};
    if (fn == nullptr || fn(&c) != 0) return g;
    g.launches = (long long)c.launches;
    g.copies = (long long)c.copies;
    g.host_waits = (long long)c.host_waits;
    g.stream_waits = (long long)c.stream_waits;
    g.stream_writes = (long long)c.stream_writes;
    return g;
}

GpuCounts minus(const GpuCounts &a, const GpuCounts &b) {
    return GpuCounts{a.launches - b.launches, a.copies - b.copies, a.host_waits - b.host_waits,
                     a.stream_waits - b.stream_waits, a.stream_writes - b.stream_writes};
}

// kSmallCalls allreduces of 8 bytes (2 int32), one node of two ranks, after a blocking
// one on device buffers that sets the team up: what they asked of the GPU, both ranks
// together, and the first error. Blocking on device buffers, or (nonblocking:
// strata_iallreduce, tested to completion; persistent: one such request started
// kSmallCalls times) on host buffers on the ranks below host_ranks, device buffers on
// the others.
constexpr int kSmallCalls = 20;
enum class Mode { Blocking, Nonblocking, Persistent };

GpuCounts count_small_allreduces(int stream_flags, std::string *error, Mode mode = Mode::Blocking, int host_ranks = 0) {
    IpcSelf self;
    ThreadJob job(kRanks);
    std::vector<std::string> errors(kRanks);
    std::atomic<int> ready{0}, finished{0};
    std::atomic<bool> go{false}, counted{false};
    GpuCounts before, after;
    job.run([&](int rank) {
        std::string &err = errors[size_t(rank)];
        strata::MemDomain *gpu = strata_test::make_gpu0_current(&err) ? strata::cuda_domain(0, &err) : nullptr;
        strata_transport_t tp = job.transport(rank);
        strata_config_t cfg = strata_test::host_test_config();
        cfg.stream_flags = stream_flags;
        strata_team_t *team = nullptr;
        if (gpu != nullptr && strata_team_create(rank, kRanks, 0, &tp, &cfg, &team) != STRATA_OK) err = "team create";
        void *send = nullptr, *recv = nullptr;
        const int32_t mine[2] = {rank + 1, 10 * (rank + 1)};
        int32_t got[2] = {0, 0};
        strata::Ticket t;
        if (err.empty() && (gpu->alloc(sizeof mine, &send) != STRATA_OK || gpu->alloc(sizeof got, &recv) != STRATA_OK ||
                            gpu->copy(send, mine, sizeof mine, &t) != STRATA_OK || strata::wait_ticket(*gpu, &t)))
            err = "device buffers";
        if (err.empty() && strata_allreduce(team, send, recv, 2, STRATA_INT32, STRATA_OP_SUM) != STRATA_OK)
            err = "the allreduce that sets the team up";
        // Every rank meets twice (even one that failed: the other would wait for it);
        // the last to arrive reads the counters before anyone goes on.
        if (++ready == kRanks) {
            before = gpu_counts();
            go = true;
        }
        while (!go.load()) std::this_thread::yield();
        const bool on_host = rank < host_ranks;
        int32_t host_got[2] = {0, 0};
        const void *in = on_host ? static_cast<const void *>(mine) : send;
        void *out = on_host ? static_cast<void *>(host_got) : recv;
        strata_request_t *kept = nullptr;  // the persistent request
        strata_start_t persistent{};
        persistent.persistent = 1;
        if (err.empty() && mode == Mode::Persistent &&
            strata_iallreduce(team, in, out, 2, STRATA_INT32, STRATA_OP_SUM, &persistent, &kept) != STRATA_OK)
            err = "the persistent allreduce";
        for (int c = 0; c < kSmallCalls && err.empty(); ++c) {
            strata_request_t *req = kept;
            strata_status_t st = STRATA_OK;
            if (mode == Mode::Blocking) {
                st = strata_allreduce(team, in, out, 2, STRATA_INT32, STRATA_OP_SUM);
            } else if ((st = mode == Mode::Persistent
                                 ? strata_request_start(kept)
                                 : strata_iallreduce(team, in, out, 2, STRATA_INT32, STRATA_OP_SUM, nullptr, &req)) ==
                       STRATA_OK) {
                while (!strata_request_test(req, &st)) std::this_thread::yield();
                if (mode == Mode::Nonblocking) strata_request_free(req);
            }
            if (st != STRATA_OK) err = std::string("allreduce: ") + strata_status_name(st);
        }
        if (kept != nullptr) strata_request_free(kept);
        if (++finished == kRanks) {
            after = gpu_counts();
            counted = true;
        }
        while (!counted.load()) std::this_thread::yield();  // no rank reads its result before
        if (err.empty() && on_host) memcpy(got, host_got, sizeof got);
        if (err.empty() && ((!on_host && (gpu->copy(got, recv, sizeof got, &t) != STRATA_OK || strata::wait_ticket(*gpu, &t))) ||
                            got[0] != 1 + 2 || got[1] != 10 + 20))
            err = "wrong sum";
        if (send != nullptr) gpu->release(send);
        if (recv != nullptr) gpu->release(recv);
        if (team != nullptr) strata_team_destroy(team);
    });
    for (const std::string &e : errors)
        if (error->empty() && !e.empty()) *error = e;
    return minus(after, before);
}

// An 8-byte device allreduce in one node at the defaults (coll_strata_stream_flags
// writes): one kernel launch and one host wait per call and rank. The stream copies
// the input into the slot and writes READY behind it; the host waits for the peers'
// READY only (a host flag poll, no GPU wait), queues the reduction and DONE, and waits
// once for the batch's event. With the flags off the host waits for the copy before it
// raises READY, and for the reduction: two (the control, so the check can fail).
TEST(StreamFlags, EightByteDeviceAllreduceAtTheDefaultsLaunchesOnceAndWaitsOnce) {
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (test/fakecuda)";
    strata_config_t defaults;
    strata_config_defaults(&defaults);
    EXPECT_EQ(defaults.stream_flags, STRATA_STREAM_FLAGS_WRITES);
    const long long per = kSmallCalls * kRanks;
    std::string err;
    const GpuCounts on = count_small_allreduces(defaults.stream_flags, &err);
    EXPECT_EQ(err, "");
    printf("per call and rank, writes: %.2f launches, %.2f copies, %.2f host waits, %.2f stream waits, %.2f stream "
           "writes\n",
           double(on.launches) / per, double(on.copies) / per, double(on.host_waits) / per,
           double(on.stream_waits) / per, double(on.stream_writes) / per);
    EXPECT_EQ(on.launches, per);
    EXPECT_LE(on.host_waits, per);
    EXPECT_LE(on.copies, per);
    EXPECT_EQ(on.stream_writes, 2 * per) << "READY and DONE";
    err.clear();
    const GpuCounts off = count_small_allreduces(STRATA_STREAM_FLAGS_OFF, &err);
    EXPECT_EQ(err, "");
    printf("per call and rank, 0: %.2f launches, %.2f host waits\n", double(off.launches) / per,
           double(off.host_waits) / per);
    EXPECT_GE(off.host_waits, 2 * per) << "the control: with the host ordering the flags it waits twice";
    EXPECT_EQ(off.stream_writes, 0);
}

}  // namespace

// A small nonblocking allreduce on host buffers on every rank of a one-node GPU team
// (runner.cc, decides_on_host): the node decides while the call runs, from the bit
// each rank publishes with its signature, and reduces in the team's host slots, with
// nothing of the GPU (before: 1 launch, 3 copies and 1 host wait a call and rank,
// staged through the GPU). Controls in the same test: with rank 0 on device buffers
// the same call runs on the GPU, exact; on device buffers everywhere the decision is
// made at the start, the call is still chained (1 launch a call and rank).
TEST(StreamFlags, SmallNonblockingHostAllreduceOnADeviceTeamAsksNothingOfTheGpu) {
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (test/fakecuda)";
    strata_config_t defaults;
    strata_config_defaults(&defaults);
    const long long per = kSmallCalls * kRanks;
    std::string err;
    const GpuCounts host = count_small_allreduces(defaults.stream_flags, &err, Mode::Nonblocking, kRanks);
    EXPECT_EQ(err, "") << "host buffers everywhere";
    printf("per call and rank, host buffers: %.2f launches, %.2f copies, %.2f host waits\n",
           double(host.launches) / per, double(host.copies) / per, double(host.host_waits) / per);
    EXPECT_EQ(host.launches, 0);
    EXPECT_EQ(host.copies, 0);
    EXPECT_EQ(host.host_waits, 0);
    EXPECT_EQ(host.stream_writes, 0);
    EXPECT_EQ(host.stream_waits, 0) << "the lane followed the application's stream with nothing to queue";
    err.clear();
    const GpuCounts kept = count_small_allreduces(defaults.stream_flags, &err, Mode::Persistent, kRanks);
    EXPECT_EQ(err, "") << "persistent, host buffers everywhere";
    printf("per start and rank, persistent on host buffers: %.2f launches, %.2f copies, %.2f host waits\n",
           double(kept.launches) / per, double(kept.copies) / per, double(kept.host_waits) / per);
    EXPECT_EQ(kept.launches + kept.copies + kept.host_waits + kept.stream_waits, 0) << "a persistent call decides at every start";
    err.clear();
    const GpuCounts mixed = count_small_allreduces(defaults.stream_flags, &err, Mode::Nonblocking, 1);
    EXPECT_EQ(err, "") << "rank 0 on host buffers, rank 1 on the GPU";
    printf("per call and rank, mixed: %.2f launches, %.2f copies, %.2f host waits\n", double(mixed.launches) / per,
           double(mixed.copies) / per, double(mixed.host_waits) / per);
    EXPECT_EQ(mixed.launches, per) << "a rank on the GPU: the node stays on the GPU";
    err.clear();
    const GpuCounts device = count_small_allreduces(defaults.stream_flags, &err, Mode::Nonblocking, 0);
    EXPECT_EQ(err, "") << "device buffers everywhere";
    printf("per call and rank, device: %.2f launches, %.2f copies, %.2f host waits\n", double(device.launches) / per,
           double(device.copies) / per, double(device.host_waits) / per);
    EXPECT_EQ(device.launches, per);
    EXPECT_LE(device.host_waits, per);
}

namespace {
// One thread rank of a one-node GPU team (GPU 0 current), set up by a blocking device
// allreduce of one int32 (dev: its buffer); *err says what failed. The team and the
// buffer go with it.
struct DeviceTeam {
    strata::MemDomain *gpu = nullptr;
    strata_team_t *team = nullptr;
    void *dev = nullptr;
    DeviceTeam(ThreadJob &job, int rank, int ranks, const strata_config_t &cfg, std::string *err) {
        gpu = strata_test::make_gpu0_current(err) ? strata::cuda_domain(0, err) : nullptr;
        strata_transport_t tp = job.transport(rank);
        if (gpu != nullptr && strata_team_create(rank, ranks, 0, &tp, &cfg, &team) != STRATA_OK) *err = "team create";
        const int32_t one = 1;
        strata::Ticket t;
        if (err->empty() && (gpu->alloc(sizeof one, &dev) != STRATA_OK || gpu->copy(dev, &one, sizeof one, &t) != STRATA_OK ||
                             strata::wait_ticket(*gpu, &t)))
            *err = "device buffer";
        if (err->empty() && strata_allreduce(team, STRATA_IN_PLACE, dev, 1, STRATA_INT32, STRATA_OP_SUM) != STRATA_OK)
            *err = "the allreduce that sets the team up";
    }
    ~DeviceTeam() {
        if (dev != nullptr) gpu->release(dev);
        if (team != nullptr) strata_team_destroy(team);
    }
    DeviceTeam(const DeviceTeam &) = delete;
    DeviceTeam &operator=(const DeviceTeam &) = delete;
};
}  // namespace

// The node's host decision waits for every node peer's signature: a peer that never
// starts the call ends it at the deadline (coll_strata_timeout), with a line that names
// that rank, never a hang. Rank 1 sets the team up and then makes no call until rank
// 0's has ended.
TEST(StreamFlags, AHostDecisionWhoseNodePeerNeverStartsEndsAtTheDeadline) {
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (test/fakecuda)";
    IpcSelf self;
    ThreadJob job(kRanks);
    std::vector<std::string> errors(kRanks);
    strata_status_t status = STRATA_OK;
    std::string said;
    std::atomic<bool> ended{false};
    job.run([&](int rank) {
        std::string &err = errors[size_t(rank)];
        strata_config_t cfg = strata_test::host_test_config();
        cfg.timeout = 0.5;
        DeviceTeam set(job, rank, kRanks, cfg, &err);
        strata_team_t *team = set.team;
        if (rank == 0 && err.empty()) {
            int32_t in = 1, out = 0;
            strata_request_t *req = nullptr;
            status = strata_iallreduce(team, &in, &out, 1, STRATA_INT32, STRATA_OP_SUM, nullptr, &req);
            if (status == STRATA_OK) {
                while (!strata_request_test(req, &status)) std::this_thread::yield();
                strata_request_free(req);
            }
            said = strata_team_last_error(team);
        }
        if (rank == 0) ended = true;
        while (!ended.load()) std::this_thread::yield();
    });
    for (const std::string &e : errors) EXPECT_EQ(e, "");
    EXPECT_EQ(status, STRATA_ERR_TIMEOUT);
    EXPECT_NE(said.find("coll_strata_timeout"), std::string::npos) << said;
    EXPECT_NE(said.find("waiting for rank 1 to begin this call"), std::string::npos) << said;
}

namespace {
// A one-node GPU team of `ranks` thread ranks, set up by one device allreduce, then
// kSmallCalls nonblocking calls on host buffers, each started by start(team, rank,
// call, &req) and waited for; check(rank) says what is wrong in that rank's results
// ("" when nothing). Returns the GPU work of the calls, every rank's; errors[rank]
// says what failed.
using StartFn = std::function<strata_status_t(strata_team_t *, int rank, int call, strata_request_t **)>;
GpuCounts count_host_calls(int ranks, const StartFn &start, const std::function<std::string(int)> &check,
                           std::vector<std::string> *errors, size_t zero_copy_size = 0) {
    IpcSelf self;
    ThreadJob job(ranks);
    errors->assign(size_t(ranks), "");
    std::atomic<int> ready{0}, finished{0};
    std::atomic<bool> go{false}, counted{false};
    GpuCounts before, after;
    job.run([&](int rank) {
        std::string &err = (*errors)[size_t(rank)];
        strata_config_t cfg = strata_test::host_test_config();
        if (zero_copy_size != 0) cfg.zero_copy_size = zero_copy_size;
        DeviceTeam set(job, rank, ranks, cfg, &err);
        strata_team_t *team = set.team;
        if (++ready == ranks) {
            before = gpu_counts();
            go = true;
        }
        while (!go.load()) std::this_thread::yield();
        for (int c = 0; c < kSmallCalls && err.empty(); ++c) {
            strata_request_t *req = nullptr;
            strata_status_t st = start(team, rank, c, &req);
            if (st == STRATA_OK && req != nullptr) {
                while (!strata_request_test(req, &st)) std::this_thread::yield();
                strata_request_free(req);
            }
            if (st != STRATA_OK) err = "call " + std::to_string(c) + ": " + strata_status_name(st);
        }
        if (++finished == ranks) {
            after = gpu_counts();
            counted = true;
        }
        while (!counted.load()) std::this_thread::yield();
        if (err.empty()) err = check(rank);
    });
    return minus(after, before);
}

void expect_no_gpu_work(const char *what, const GpuCounts &used, const std::vector<std::string> &errors) {
    for (const std::string &e : errors) EXPECT_EQ(e, "") << what;
    printf("%s on host buffers, all calls and ranks: %lld launches, %lld copies, %lld host waits\n", what,
           used.launches, used.copies, used.host_waits);
    EXPECT_EQ(used.launches + used.copies + used.host_waits + used.stream_waits, 0) << what;
}
}  // namespace

// reduce_scatter's host form (the whole vector reduced in the host slots, then this
// rank's range): 20 nonblocking calls of 3 int32 split 2 + 1 over one node of 2, host
// buffers on both ranks, ask nothing of the GPU and are exact.
TEST(StreamFlags, SmallNonblockingHostReduceScatterOnADeviceTeamAsksNothingOfTheGpu) {
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (test/fakecuda)";
    int32_t out[kRanks][2] = {};
    const size_t counts[kRanks] = {2, 1};
    std::vector<std::string> errors;
    const GpuCounts used = count_host_calls(
        kRanks,
        [&](strata_team_t *team, int rank, int, strata_request_t **req) {
            static thread_local int32_t in[3];
            for (int i = 0; i < 3; ++i) in[i] = (rank + 1) * (i == 0 ? 1 : i == 1 ? 10 : 100);
            return strata_ireduce_scatter(team, in, out[rank], counts, STRATA_INT32, STRATA_OP_SUM, nullptr, req);
        },
        [&](int rank) {
            const bool exact = rank == 0 ? out[0][0] == 1 + 2 && out[0][1] == 10 + 20 : out[1][0] == 100 + 200;
            return exact ? std::string() : std::string("wrong sums");
        },
        &errors);
    expect_no_gpu_work("reduce_scatter", used, errors);
}

// bcast's, allgather's and alltoall's host forms (algo/node_move.cc): on one node of 3,
// host buffers on every rank, sizes that take 2 or 3 segments of the host slots (2 KiB
// each, shared among alltoall's 3 blocks), every other call in place (allgather,
// alltoall) or from another root (bcast): exact, and nothing of the GPU. Without the
// host forms each call was staged through the GPU (a launch or copies and a host wait
// per call and rank).
TEST(StreamFlags, SmallNonblockingHostBcastAllgatherAlltoallOnADeviceTeamAskNothingOfTheGpu) {
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (test/fakecuda)";
    constexpr int kP = 3;
    const auto value = [](int from, int to, size_t i, int call) { return char((from * 31 + to * 7 + int(i) + call) % 251); };
    std::vector<std::string> errors;
    {
        constexpr size_t kBytes = 5000;  // 3 segments
        std::vector<char> buf[kP];
        for (auto &b : buf) b.resize(kBytes);
        std::atomic<int> last{0};
        const GpuCounts used = count_host_calls(
            kP,
            [&](strata_team_t *team, int rank, int call, strata_request_t **req) {
                const int root = call % kP;
                for (size_t i = 0; i < kBytes; ++i) buf[rank][i] = rank == root ? value(root, 0, i, call) : 0;
                last = call;
                return strata_ibcast(team, buf[rank].data(), kBytes, root, nullptr, req);
            },
            [&](int rank) {
                for (size_t i = 0; i < kBytes; ++i)
                    if (buf[rank][i] != value(last.load() % kP, 0, i, last.load())) return "bcast: byte " + std::to_string(i);
                return std::string();
            },
            &errors);
        expect_no_gpu_work("bcast", used, errors);
    }
    {
        constexpr size_t kBlock = 2800;  // 2 segments; 8400 bytes in all
        std::vector<char> in[kP], out[kP];
        for (int r = 0; r < kP; ++r) in[r].resize(kBlock), out[r].resize(kBlock * kP);
        std::atomic<int> last{0};
        const GpuCounts used = count_host_calls(
            kP,
            [&](strata_team_t *team, int rank, int call, strata_request_t **req) {
                const bool in_place = call % 2 == 1;
                std::fill(out[rank].begin(), out[rank].end(), 0);
                char *mine = in_place ? out[rank].data() + kBlock * size_t(rank) : in[rank].data();
                for (size_t i = 0; i < kBlock; ++i) mine[i] = value(rank, 0, i, call);
                last = call;
                return strata_iallgather(team, in_place ? STRATA_IN_PLACE : mine, out[rank].data(), kBlock, nullptr, req);
            },
            [&](int rank) {
                for (int r = 0; r < kP; ++r)
                    for (size_t i = 0; i < kBlock; ++i)
                        if (out[rank][kBlock * size_t(r) + i] != value(r, 0, i, last.load()))
                            return "allgather: block " + std::to_string(r) + " byte " + std::to_string(i);
                return std::string();
            },
            &errors);
        expect_no_gpu_work("allgather", used, errors);
    }
    // alltoall, and again with coll_strata_zero_copy_size below the call's size: its
    // algorithm then branches on reading peers' buffers in place, and the node decides
    // nothing (decides_on_host), which must still be exact (host buffers cannot be
    // mapped: the GPU's slots).
    for (const size_t zero_copy_size : {size_t(0), size_t(256)}) {
        constexpr size_t kBlock = 1000;  // 682 bytes of each slot per block: 2 segments
        std::vector<char> in[kP], out[kP];
        for (int r = 0; r < kP; ++r) in[r].resize(kBlock * kP), out[r].resize(kBlock * kP);
        std::atomic<int> last{0};
        const GpuCounts used = count_host_calls(
            kP,
            [&](strata_team_t *team, int rank, int call, strata_request_t **req) {
                const bool in_place = call % 2 == 1;
                std::vector<char> &src = in_place ? out[rank] : in[rank];
                for (int to = 0; to < kP; ++to)
                    for (size_t i = 0; i < kBlock; ++i) src[kBlock * size_t(to) + i] = value(rank, to, i, call);
                if (!in_place) std::fill(out[rank].begin(), out[rank].end(), 0);
                last = call;
                return strata_ialltoall(team, in_place ? STRATA_IN_PLACE : src.data(), out[rank].data(), kBlock, nullptr,
                                        req);
            },
            [&](int rank) {
                for (int from = 0; from < kP; ++from)
                    for (size_t i = 0; i < kBlock; ++i)
                        if (out[rank][kBlock * size_t(from) + i] != value(from, rank, i, last.load()))
                            return "alltoall: block " + std::to_string(from) + " byte " + std::to_string(i);
                return std::string();
            },
            &errors, zero_copy_size);
        if (zero_copy_size == 0) {
            expect_no_gpu_work("alltoall", used, errors);
        } else {
            for (const std::string &e : errors) EXPECT_EQ(e, "") << "alltoall, zero_copy_size " << zero_copy_size;
            EXPECT_GT(used.copies, 0) << "no host form where the algorithm may read in place";
        }
    }
}
