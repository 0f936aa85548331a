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
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "mem/classify.h"
#include "mem/cuda_domain.h"
#include "mem/domain.h"
#include "strata.h"
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

void one_rank(ThreadJob &job, int rank, int stream_flags, std::atomic<int> *started, std::atomic<int> *looked,
              Seen *seen) {
    std::string &err = seen->error;
    if (!strata_test::make_gpu0_current(&err)) return;
    strata::MemDomain *gpu = strata::cuda_domain(0, &err);
    if (gpu == nullptr) return;
    strata_transport_t tp = job.transport(rank);
    strata_config_t cfg = strata_test::host_test_config();
    cfg.device_segment_size = 1024;
    cfg.ipc_cache_size = 0;
    cfg.stream_flags = stream_flags;
    strata_team_t *team = nullptr;
    if (strata_team_create(rank, kRanks, 0, &tp, &cfg, &team) != STRATA_OK) {
        err = "team create";
        return;
    }
    const size_t bytes = kCount * sizeof(int32_t);
    void *send = nullptr, *recv = nullptr;
    std::vector<int32_t> host(kCount);
    for (size_t i = 0; i < kCount; ++i) host[i] = input(rank, i);
    strata::Ticket t;
    if (gpu->alloc(bytes, &send) != STRATA_OK || gpu->alloc(bytes, &recv) != STRATA_OK ||
        gpu->copy(send, host.data(), bytes, &t) != STRATA_OK || strata::wait_ticket(*gpu, &t) != STRATA_OK) {
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
    if (err.empty()) {
        strata_status_t st = STRATA_OK;
        while (!strata_request_test(req, &st)) std::this_thread::yield();
        if (st != STRATA_OK || !sum_arrived(*gpu, recv, &host)) err = "the nonblocking allreduce's result";
        strata_request_free(req);
    }
    gpu->release(send);
    gpu->release(recv);
    strata_team_destroy(team);
}

std::vector<Seen> run_job(int stream_flags) {
    IpcSelf self;
    ThreadJob job(kRanks);
    std::vector<Seen> seen(kRanks);
    std::atomic<int> started{0}, looked{0};
    job.run([&](int rank) { one_rank(job, rank, stream_flags, &started, &looked, &seen[size_t(rank)]); });
    return seen;
}

bool fake_driver() {
    std::string why;
    const strata::topo::cu::Driver *d = strata::cuda_driver(&why);
    return d != nullptr && d->lib != nullptr && dlsym(d->lib, "fakecuda_counters") != nullptr;
}

TEST(StreamFlags, StartedNonblockingDeviceAllreduceCompletesWithoutHostProgress) {
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (test/fakecuda)";
    for (const Seen &s : run_job(STRATA_STREAM_FLAGS_AUTO)) {
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

}  // namespace
